from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "refunds_admin.web"
    label = "web"

    def ready(self):
        from django.contrib import admin

        from refunds_admin.accounts.roles import ROLES, has_role

        each_context = admin.site.each_context

        def without_view_site_for_non_staff(request):
            """The admin's "View site" leads to the staff pages; a superuser without a staff
            role would only get "not allowed" there, so the link is left out for them."""
            context = each_context(request)
            if not has_role(request.user, ROLES):
                context["site_url"] = None
            return context

        admin.site.each_context = without_view_site_for_non_staff  # type: ignore[method-assign]
