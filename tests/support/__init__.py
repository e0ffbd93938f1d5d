"""Helpers shared by several test files (new ones go here rather than into a test file)."""
