-- Records the ledger schema version that @baton/store checks at start-up.
-- Every later migration that changes the schema sets it to its own number.
INSERT INTO "baton_meta" ("key", "value") VALUES ('schema_version', '1')
  ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value";
