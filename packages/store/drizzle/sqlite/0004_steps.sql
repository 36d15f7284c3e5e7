CREATE TABLE `baton_steps` (
	`id` text NOT NULL,
	`key` text NOT NULL,
	`status` text NOT NULL,
	`owner` text NOT NULL,
	`lease_until` integer NOT NULL,
	`claims` integer NOT NULL,
	`outcome` text,
	`recorded_at` integer,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `baton_steps_expires_at_idx` ON `baton_steps` (`expires_at`);--> statement-breakpoint
-- Schema version 4: durable steps (leases and recorded outcomes).
INSERT INTO `baton_meta` (`key`, `value`) VALUES ('schema_version', '4')
  ON CONFLICT (`key`) DO UPDATE SET `value` = excluded.`value`;
