CREATE TABLE "baton_outbox" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"body" text NOT NULL,
	"attempts" integer NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"delivered_at" bigint,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "baton_requests" ADD COLUMN "due_at" bigint;--> statement-breakpoint
ALTER TABLE "baton_requests" ADD COLUMN "lease_owner" text;--> statement-breakpoint
ALTER TABLE "baton_requests" ADD COLUMN "lease_until" bigint;--> statement-breakpoint
CREATE INDEX "baton_outbox_next_attempt_at_idx" ON "baton_outbox" USING btree ("delivered_at","next_attempt_at");--> statement-breakpoint
CREATE INDEX "baton_outbox_expires_at_idx" ON "baton_outbox" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "baton_requests_due_at_idx" ON "baton_requests" USING btree ("due_at");--> statement-breakpoint
-- Schema version 8: parked requests carry their next due timer (due_at, indexed) and the
-- scheduler's claim on it (lease_owner, lease_until); the outbox of notifications (baton_outbox).
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '8')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
