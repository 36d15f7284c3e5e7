CREATE INDEX "baton_requests_updated_at_id_idx" ON "baton_requests" USING btree ("updated_at" DESC NULLS FIRST,"id" collate "C");--> statement-breakpoint
-- Schema version 10: `baton runs list` reads parked requests newest write first, then by id in
-- code-point order, through an index on both (keyset paging without a sort of the whole table).
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '10')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
