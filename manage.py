#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["compute_payouts"] and "--help" not in sys.argv and "-h" not in sys.argv:
        # The payout engine is pure: compute_payouts needs no database, no settings and no apps,
        # and setting Django up costs more than computing 100k entries. Same code as the command.
        from refunds_admin.payouts.cli import main

        sys.exit(main(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "refunds_admin.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
