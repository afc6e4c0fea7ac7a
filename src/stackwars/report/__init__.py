"""Presentation of results: tables for the terminal and for markdown, and run progress."""
