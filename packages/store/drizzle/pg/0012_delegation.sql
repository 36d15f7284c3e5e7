CREATE TABLE "baton_delegations" (
	"id" text PRIMARY KEY NOT NULL,
	"principal" text NOT NULL,
	"principal_name" text,
	"delegate" text NOT NULL,
	"delegate_name" text,
	"roles" text NOT NULL,
	"authority" text NOT NULL,
	"starts_at" bigint NOT NULL,
	"ends_at" bigint NOT NULL,
	"reason" text NOT NULL,
	"set_by" text NOT NULL,
	"set_by_name" text,
	"created_at" bigint NOT NULL,
	"removed_at" bigint,
	"removed_reason" text,
	"removed_by" text,
	"removed_by_name" text
);
--> statement-breakpoint
ALTER TABLE "baton_decisions" ADD COLUMN "assignee" text;--> statement-breakpoint
ALTER TABLE "baton_decisions" ADD COLUMN "handover" text;--> statement-breakpoint
ALTER TABLE "baton_decisions" ADD COLUMN "on_behalf_of" text;--> statement-breakpoint
ALTER TABLE "baton_decisions" ADD COLUMN "on_behalf_of_name" text;--> statement-breakpoint
CREATE INDEX "baton_delegations_delegate_idx" ON "baton_delegations" USING btree ("delegate","ends_at");--> statement-breakpoint
CREATE INDEX "baton_decisions_assignee_idx" ON "baton_decisions" USING btree ("assignee");--> statement-breakpoint
-- Schema version 12: delegation. A pending decision handed to
-- another principal (`assignee`, `handover`), a decision made for someone (`on_behalf_of`), and
-- absence delegates set by operators (`baton_delegations`).
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '12')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
