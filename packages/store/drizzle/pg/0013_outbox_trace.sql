ALTER TABLE "baton_outbox" ADD COLUMN "trace_context" text;--> statement-breakpoint
-- Schema version 13: the W3C traceparent of the round that raised an outbox row
-- (`baton_outbox.trace_context`, null without tracing), so its deliveries join the instance's trace.
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '13')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
