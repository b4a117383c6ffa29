from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    """Hashed, compressed static files; a file missing from the manifest (collectstatic not yet run
    after an upgrade) is served under its plain name instead of failing the page."""

    manifest_strict = False
