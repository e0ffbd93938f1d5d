"""Cancellation policies in the app: named, versioned `cancellation-policy/1` documents, their
four-eyes approval, and the default policy. Sits between the engine (payouts) and tournaments.
"""
