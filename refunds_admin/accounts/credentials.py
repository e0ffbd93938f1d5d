"""A sign-in that is one's own: a password or an authenticator set by another signed-in user (a
superuser in the admin) means that someone else could sign in as this person. Until they set it
again themselves, such a person approves and rejects nothing.

The audit receivers (audit/access.py), which see who made each change, call `set_for` when a
password or device is changed for someone else and `set_by_themselves` when the person changes
their own. Changes made by the system (a management command or the shell on the server) do not
count: whoever runs those can read the database anyway.
"""

from .models import StaffProfile

PASSWORD, DEVICE = "password", "device"
_FLAG = {PASSWORD: "password_set_for_them", DEVICE: "device_set_for_them"}


def set_for(user, what, *, by):
    """`by` set `user`'s password or device (`what`): `user` may not decide until they redo it."""
    if user.pk is None or by is None or by.pk == user.pk:
        return
    StaffProfile.objects.update_or_create(
        user_id=user.pk, defaults={_FLAG[what]: True, "credentials_set_by_id": by.pk}
    )


def set_by_themselves(user, what):
    """The person set their own password, or enrolled their own authenticator."""
    if user.pk is not None:
        StaffProfile.objects.filter(user_id=user.pk).update(**{_FLAG[what]: False})


def why_not_own_credentials(user):
    """Why the person's sign-in is not theirs alone, or "" when it is."""
    if user is None or user.pk is None:
        return ""
    row = (
        StaffProfile.objects.filter(user_id=user.pk)
        .values_list("password_set_for_them", "device_set_for_them", "credentials_set_by__username")
        .first()
    )
    if row is None or not (row[0] or row[1]):
        return ""
    what = " and ".join(w for w, flag in (("password", row[0]), ("authenticator", row[1])) if flag)
    redo = " and ".join(
        w
        for w, flag in (("change your password", row[0]), ("enrol your authenticator", row[1]))
        if flag
    )
    return (
        f"{user.get_username()}'s {what} was set by {row[2] or 'someone else'}: {redo} yourself "
        "before you decide on any proposal."
    )
