ALTER TABLE `baton_decisions` ADD `decider_name` text;--> statement-breakpoint
-- Deciders are stored as keyed hashes from schema version 6 on, and a SQL migration cannot
-- compute one (the key is the engine's): a decision decided before keeps its readable decider in
-- `decider_name` with `decider` empty, until the engine rewrites the row (hash, name only when
-- names are stored, content sealed again) when a runner is created on this ledger.
UPDATE `baton_decisions` SET `decider_name` = `decider`, `decider` = NULL WHERE `decider` IS NOT NULL;--> statement-breakpoint
-- Schema version 6: deciders as keyed hashes, the readable `decider_name` only when names are stored.
INSERT INTO `baton_meta` (`key`, `value`) VALUES ('schema_version', '6')
  ON CONFLICT (`key`) DO UPDATE SET `value` = excluded.`value`;
