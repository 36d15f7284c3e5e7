CREATE TABLE "baton_steps" (
	"id" text NOT NULL,
	"key" text NOT NULL,
	"status" text NOT NULL,
	"owner" text NOT NULL,
	"lease_until" bigint NOT NULL,
	"claims" integer NOT NULL,
	"outcome" text,
	"recorded_at" bigint,
	"expires_at" bigint NOT NULL,
	CONSTRAINT "baton_steps_pk" PRIMARY KEY("id","key")
);
--> statement-breakpoint
CREATE INDEX "baton_steps_expires_at_idx" ON "baton_steps" USING btree ("expires_at");--> statement-breakpoint
-- Schema version 4: durable steps (leases and recorded outcomes).
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '4')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
