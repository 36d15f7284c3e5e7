CREATE TABLE "baton_meta" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "baton_redemptions" (
	"jti" text PRIMARY KEY NOT NULL,
	"responses_digest" text NOT NULL,
	"outcome" text,
	"expires_at" bigint NOT NULL,
	"redeemed_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "baton_tokens" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"purpose" text NOT NULL,
	"data" text,
	"expires_at" bigint NOT NULL,
	"used_at" bigint,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE INDEX "baton_redemptions_expires_at_idx" ON "baton_redemptions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "baton_tokens_expires_at_idx" ON "baton_tokens" USING btree ("expires_at");