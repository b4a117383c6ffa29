"""PostgreSQL: the key an API request presents is read through a function
(sessions_app.keys.LIVE_KEY), so its statement is planned once per connection, not on every
request. Nothing on SQLite.

The function as it was made here; its text is kept in this file, so this migration makes the
same function whatever the code of later versions. Its columns are the key's, in the model's
order, then the channel's name and description: a change to the key's columns needs a migration
that makes it again (tests/test_statement_counts.py holds the two equal)."""

from django.db import migrations

CREATE_LIVE_KEY = """
CREATE OR REPLACE FUNCTION hermes_live_key(p_prefix text) RETURNS TABLE (
    o_id bigint, o_channel_id bigint, o_label varchar(100), o_prefix varchar(16),
    o_key_hash varchar(64), o_created_at timestamp with time zone,
    o_last_used_at timestamp with time zone, o_revoked_at timestamp with time zone,
    o_scopes varchar(40), o_expires_at timestamp with time zone,
    o_channel_name varchar, o_channel_description text
) LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY SELECT k.id, k.channel_id, k.label, k.prefix, k.key_hash, k.created_at,
        k.last_used_at, k.revoked_at, k.scopes, k.expires_at, c.name, c.description
        FROM sessions_app_apikey k JOIN sessions_app_channel c ON c.id = k.channel_id
        WHERE k.prefix = p_prefix AND k.revoked_at IS NULL;
END
$$"""

DROP_LIVE_KEY = "DROP FUNCTION IF EXISTS hermes_live_key(text)"


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(CREATE_LIVE_KEY)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(DROP_LIVE_KEY)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0018_audit_model_memory")]

    operations = [migrations.RunPython(create, drop)]
