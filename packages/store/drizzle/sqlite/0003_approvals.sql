CREATE TABLE `baton_decisions` (
	`id` text NOT NULL,
	`key` text NOT NULL,
	`flow` text NOT NULL,
	`role` text,
	`message` text NOT NULL,
	`schema` text NOT NULL,
	`requester` text NOT NULL,
	`requested_at` integer NOT NULL,
	`deadline` integer,
	`status` text NOT NULL,
	`decider` text,
	`content` text,
	`decided_at` integer,
	PRIMARY KEY(`id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `baton_decisions_status_role_idx` ON `baton_decisions` (`status`,`role`);--> statement-breakpoint
CREATE TABLE `baton_requests` (
	`id` text PRIMARY KEY NOT NULL,
	`flow` text NOT NULL,
	`requester` text NOT NULL,
	`requester_name` text,
	`status` text NOT NULL,
	`waiting_for` text NOT NULL,
	`state` text NOT NULL,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `baton_requests_requester_updated_at_idx` ON `baton_requests` (`requester`,`updated_at`);--> statement-breakpoint
CREATE INDEX `baton_requests_expires_at_idx` ON `baton_requests` (`expires_at`);--> statement-breakpoint
-- Schema version 3: parked requests and the decisions they wait for.
INSERT INTO `baton_meta` (`key`, `value`) VALUES ('schema_version', '3')
  ON CONFLICT (`key`) DO UPDATE SET `value` = excluded.`value`;
