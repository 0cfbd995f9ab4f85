-- A sign-in remembers the browser it was made from (its User-Agent, cut to 256 characters), so a person listing
-- their sign-ins can tell them apart.
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
