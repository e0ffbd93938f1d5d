"""A sign-in that is one's own: a password or an authenticator set by someone else (a superuser
in the admin, a command run for them) means that someone else could sign in as this person.
Until they change it themselves, such a person may not approve or reject anything.

The audit receivers (audit/access.py) call `set_for(user, by=...)` when a password or device is
changed for someone else, and `set_by_themselves(user)` when the person changes it themselves.
"""

from django.utils import timezone

from .models import StaffProfile


def set_for(user, *, by):
    """`by` set `user`'s password or authenticator: `user` may not decide until they change it."""
    if user.pk is None or by is None or getattr(by, "pk", None) == user.pk:
        return
    StaffProfile.objects.update_or_create(
        user_id=user.pk,
        defaults={"credentials_set_by_id": by.pk, "credentials_set_at": timezone.now()},
    )


def set_by_themselves(user):
    """The person changed their own password or enrolled their own authenticator."""
    if user.pk is not None:
        StaffProfile.objects.filter(user_id=user.pk).update(
            credentials_set_by=None, credentials_set_at=None
        )


def why_not_own_credentials(user):
    """Why the person's sign-in is not theirs alone, or "" when it is."""
    if user is None or user.pk is None:
        return ""
    set_by = (
        StaffProfile.objects.filter(user_id=user.pk, credentials_set_by__isnull=False)
        .values_list("credentials_set_by__username", flat=True)
        .first()
    )
    if set_by is None:
        return ""
    return (
        f"{user.get_username()}'s password or authenticator was set by {set_by}: change your "
        "password and enrol your authenticator yourself before you decide on any proposal."
    )
