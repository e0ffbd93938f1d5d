"""Write the API's OpenAPI document to docs/openapi.json (or print it with `-`).

Run after changing an /api/ operation or its models: tests/web/test_api_schema.py fails while
the committed file and the served /api/schema differ.
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from refunds_admin.web.api_urls import document


class Command(BaseCommand):
    help = "Write the /api/ OpenAPI document to docs/openapi.json (`-`: standard output)."

    def add_arguments(self, parser):
        default = Path(settings.BASE_DIR) / "docs" / "openapi.json"
        parser.add_argument("path", nargs="?", default=str(default))

    def handle(self, *args, path, **options):
        if path == "-":
            self.stdout.write(document(), ending="")
            return
        Path(path).write_text(document(), encoding="utf-8")
        self.stdout.write(f"Wrote {path}")
