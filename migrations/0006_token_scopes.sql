-- What a token may do beyond the CLI's API (a space-separated list; '' = nothing more): `library` lets it use the
-- account's library (/mcp, /api/library). Tokens made before this have none.
ALTER TABLE api_tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT '';
ALTER TABLE devices ADD COLUMN scopes TEXT NOT NULL DEFAULT '';
