CREATE TABLE "baton_audit" (
	"fid" text NOT NULL,
	"flow" text NOT NULL,
	"hash" text NOT NULL,
	"round" integer NOT NULL,
	"at" bigint NOT NULL,
	"ms" bigint NOT NULL,
	"principal" text NOT NULL,
	"before" text,
	"after" text,
	"path" text NOT NULL,
	"asked" text NOT NULL,
	"received" text NOT NULL,
	"outcome" text NOT NULL,
	"message" text,
	CONSTRAINT "baton_audit_pk" PRIMARY KEY("fid","round")
);
--> statement-breakpoint
CREATE INDEX "baton_audit_at_idx" ON "baton_audit" USING btree ("at");--> statement-breakpoint
CREATE INDEX "baton_audit_flow_at_idx" ON "baton_audit" USING btree ("flow","at");--> statement-breakpoint
-- Schema version 2: the audit trail.
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '2')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
