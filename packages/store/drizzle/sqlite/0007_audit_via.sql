ALTER TABLE `baton_audit` ADD `via` text DEFAULT 'call' NOT NULL;--> statement-breakpoint
-- Schema version 7: each audit entry says whose call ran the round (`via`); older rows were
-- all the requester's own calls.
INSERT INTO `baton_meta` (`key`, `value`) VALUES ('schema_version', '7')
  ON CONFLICT (`key`) DO UPDATE SET `value` = excluded.`value`;
