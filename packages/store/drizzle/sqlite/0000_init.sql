CREATE TABLE `baton_meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `baton_redemptions` (
	`jti` text PRIMARY KEY NOT NULL,
	`responses_digest` text NOT NULL,
	`outcome` text,
	`expires_at` integer NOT NULL,
	`redeemed_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `baton_redemptions_expires_at_idx` ON `baton_redemptions` (`expires_at`);--> statement-breakpoint
CREATE TABLE `baton_tokens` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`purpose` text NOT NULL,
	`data` text,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `baton_tokens_expires_at_idx` ON `baton_tokens` (`expires_at`);