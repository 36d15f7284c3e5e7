ALTER TABLE `baton_audit` ADD `args` text;--> statement-breakpoint
ALTER TABLE `baton_audit` ADD `principal_name` text;--> statement-breakpoint
ALTER TABLE `baton_audit` ADD `expires_at` integer;--> statement-breakpoint
-- Schema version 5: the audit trail records a run's arguments (opt-in), the caller's readable
-- id (opt-in) and when each handed-out requestState expires.
INSERT INTO `baton_meta` (`key`, `value`) VALUES ('schema_version', '5')
  ON CONFLICT (`key`) DO UPDATE SET `value` = excluded.`value`;
