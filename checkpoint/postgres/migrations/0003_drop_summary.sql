-- Version 3: the entry column replaces the JSON summary.

ALTER TABLE sessions ALTER COLUMN entry SET NOT NULL, DROP COLUMN summary;
