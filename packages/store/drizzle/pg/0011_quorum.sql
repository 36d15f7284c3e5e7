CREATE TABLE "baton_decision_votes" (
	"id" text NOT NULL,
	"key" text NOT NULL,
	"voter" text NOT NULL,
	"voter_name" text,
	"display_name" text,
	"content" text NOT NULL,
	"decided_at" bigint NOT NULL,
	"via" text NOT NULL,
	"version" integer NOT NULL,
	CONSTRAINT "baton_decision_votes_pk" PRIMARY KEY("id","key","voter")
);
--> statement-breakpoint
ALTER TABLE "baton_decisions" ADD COLUMN "decider_display" text;--> statement-breakpoint
ALTER TABLE "baton_decisions" ADD COLUMN "via" text;--> statement-breakpoint
-- Schema version 11: votes of quorum decisions (one per request, key and voter), and the display
-- name and channel of every recorded decision (audit of who decided).
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '11')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
