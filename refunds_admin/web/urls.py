from django.urls import path

from .views import (
    audit,
    dashboard,
    incidents,
    notifications,
    outages,
    players,
    policies,
    proposals,
    reports,
    tournaments,
    worklists,
)

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("timezone/", dashboard.set_timezone, name="set_timezone"),
    # Tournaments and snapshots
    path("tournaments/", tournaments.tournament_list, name="tournament_list"),
    path("tournaments/import/", tournaments.tournament_import, name="tournament_import"),
    path("tournaments/<int:pk>/", tournaments.tournament_detail, name="tournament_detail"),
    path("tournaments/<int:pk>/policy/", policies.tournament_policy, name="tournament_policy"),
    # Cancellation policies and their versions
    path("policies/", policies.policy_list, name="policy_list"),
    path("policies/propose/", policies.policy_propose, name="policy_propose"),
    path(
        "policies/versions/<int:pk>/", policies.policy_version_detail, name="policy_version_detail"
    ),
    path(
        "policies/versions/<int:pk>/approve/",
        policies.policy_version_approve,
        name="policy_version_approve",
    ),
    path(
        "policies/versions/<int:pk>/reject/",
        policies.policy_version_reject,
        name="policy_version_reject",
    ),
    path(
        "policies/<slug:policy_id>/default/", policies.policy_set_default, name="policy_set_default"
    ),
    path(
        "tournaments/<int:pk>/snapshots/<int:version>.json",
        tournaments.snapshot_document,
        name="snapshot_document",
    ),
    # Worklists
    path("proposals/", worklists.proposal_list, name="proposal_list"),
    path("incidents/", worklists.incident_list, name="incident_list"),
    # Incidents
    path("incidents/new/", incidents.incident_new, name="incident_new"),
    path("incidents/preview/", incidents.incident_preview, name="incident_preview"),
    path("incidents/<int:pk>/", incidents.incident_detail, name="incident_detail"),
    path(
        "incidents/<int:pk>/snapshot-changes/",
        incidents.incident_snapshot_changes,
        name="incident_snapshot_changes",
    ),
    path("incidents/<int:pk>/restart/", incidents.incident_restart, name="incident_restart"),
    path("incidents/<int:pk>/resumed/", incidents.incident_resumed, name="incident_resumed"),
    path(
        "incidents/<int:pk>/not-resumable/",
        incidents.incident_not_resumable,
        name="incident_not_resumable",
    ),
    path("incidents/<int:pk>/site-wide/", incidents.incident_site_wide, name="incident_site_wide"),
    path("incidents/<int:pk>/cancel/", incidents.incident_cancel, name="incident_cancel"),
    path("incidents/<int:pk>/prepare/", incidents.incident_prepare, name="incident_prepare"),
    # Outages: one failure, many tournaments
    path("outages/", outages.outage_list, name="outage_list"),
    path("outages/new/", outages.outage_new, name="outage_new"),
    path("outages/candidates/", outages.outage_candidates, name="outage_candidates"),
    path("outages/<int:pk>/", outages.outage_detail, name="outage_detail"),
    path("outages/<int:pk>/resumed/", outages.outage_resumed, name="outage_resumed"),
    path(
        "outages/<int:pk>/not-resumable/",
        outages.outage_not_resumable,
        name="outage_not_resumable",
    ),
    path("outages/<int:pk>/cancel/", outages.outage_cancel_rest, name="outage_cancel_rest"),
    path("outages/<int:pk>/site-wide/", outages.outage_site_wide, name="outage_site_wide"),
    path("outages/<int:pk>/add/", outages.outage_add, name="outage_add"),
    path("outages/<int:pk>/prepare/", outages.outage_prepare, name="outage_prepare"),
    path(
        "outages/<int:pk>/prepare/progress/",
        outages.outage_prepare_progress,
        name="outage_prepare_progress",
    ),
    path("outages/<int:pk>/review/", outages.outage_review, name="outage_review"),
    path(
        "outages/<int:pk>/review/reject/",
        outages.outage_review_reject,
        name="outage_review_reject",
    ),
    path("outages/<int:pk>/posting/", outages.outage_posting, name="outage_posting"),
    path("outages/<int:pk>/report/", outages.outage_report, name="outage_report"),
    path("outages/<int:pk>/replay/", outages.outage_replay, name="outage_replay"),
    path("outages/<int:pk>/report.csv", outages.outage_report_csv, name="outage_report_csv"),
    path("outages/<int:pk>/report.xlsx", outages.outage_report_xlsx, name="outage_report_xlsx"),
    # Proposals, approval, posting
    path("proposals/<int:pk>/", proposals.proposal_detail, name="proposal_detail"),
    path(
        "proposals/<int:pk>/statement/<path:entry_id>/",
        proposals.proposal_statement,
        name="proposal_statement",
    ),
    path("proposals/<int:pk>/chart.svg", proposals.proposal_chart, name="proposal_chart"),
    path(
        "proposals/<int:pk>/export.csv", proposals.proposal_export_csv, name="proposal_export_csv"
    ),
    path(
        "proposals/<int:pk>/export.xlsx",
        proposals.proposal_export_xlsx,
        name="proposal_export_xlsx",
    ),
    path(
        "proposals/<int:pk>/export.json",
        proposals.proposal_export_json,
        name="proposal_export_json",
    ),
    path("proposals/<int:pk>/submit/", proposals.proposal_submit, name="proposal_submit"),
    path("proposals/<int:pk>/approval/", proposals.proposal_approval, name="proposal_approval"),
    path("proposals/<int:pk>/reject/", proposals.proposal_reject, name="proposal_reject"),
    path("proposals/<int:pk>/withdraw/", proposals.proposal_withdraw, name="proposal_withdraw"),
    path("proposals/<int:pk>/replay/", proposals.proposal_replay, name="proposal_replay"),
    path("proposals/<int:pk>/posting/", proposals.proposal_posting, name="proposal_posting"),
    path(
        "proposals/<int:pk>/resume-posting/",
        proposals.proposal_resume_posting,
        name="proposal_resume_posting",
    ),
    # Audit and player lookup
    path("audit/", audit.audit, name="audit"),
    path("audit/export.csv", audit.audit_export, name="audit_export"),
    path("players/", players.player_lookup, name="player_lookup"),
    path("players/send-statement/", players.send_statement, name="send_statement"),
    # Player statements, staff notifications, the finance report
    path(
        "proposals/<int:pk>/statements/",
        notifications.statement_outbox,
        name="statement_outbox",
    ),
    path(
        "proposals/<int:pk>/statements/retry/",
        notifications.statement_retry,
        name="statement_retry",
    ),
    path(
        "settings/notifications/", notifications.notification_settings, name="notification_settings"
    ),
    path("reports/", reports.finance_report, name="finance_report"),
    path("reports/chart.svg", reports.finance_report_chart, name="finance_report_chart"),
    path("reports/export.csv", reports.finance_report_csv, name="finance_report_csv"),
    path("reports/export.xlsx", reports.finance_report_xlsx, name="finance_report_xlsx"),
    path("reports/postings/<int:pk>/credits/", reports.posting_credits, name="posting_credits"),
]
