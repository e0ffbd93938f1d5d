from django.shortcuts import render


def csrf_failure(request, reason=""):
    """A refused form (expired or missing CSRF token) in the app's own 403 page: Django's default
    page carries an inline <style> that the Content-Security-Policy refuses."""
    message = "The form expired or was sent from elsewhere. Reload the page and try again."
    # Not a question of role: the page says only what went wrong (form_expired).
    return render(request, "403.html", {"exception": message, "form_expired": True}, status=403)
