CREATE TABLE "baton_event_waits" (
	"id" text NOT NULL,
	"event" text NOT NULL,
	"match_key" text NOT NULL,
	"flow" text NOT NULL,
	CONSTRAINT "baton_event_waits_pk" PRIMARY KEY("id","event","match_key")
);
--> statement-breakpoint
CREATE TABLE "baton_events" (
	"event" text NOT NULL,
	"id" text NOT NULL,
	"match_key" text NOT NULL,
	"data" text NOT NULL,
	"received_at" bigint NOT NULL,
	"lookback_until" bigint NOT NULL,
	"delivered" integer,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "baton_events_pk" PRIMARY KEY("event","id")
);
--> statement-breakpoint
CREATE INDEX "baton_event_waits_event_match_idx" ON "baton_event_waits" USING btree ("event","match_key");--> statement-breakpoint
CREATE INDEX "baton_events_event_match_idx" ON "baton_events" USING btree ("event","match_key","received_at");--> statement-breakpoint
CREATE INDEX "baton_events_expires_at_idx" ON "baton_events" USING btree ("expires_at");--> statement-breakpoint
-- Schema version 9: event waits of parked requests (baton_event_waits, indexed by event and
-- correlation key) and received events kept for de-duplication and lookback (baton_events).
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '9')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
