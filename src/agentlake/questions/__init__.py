"""The data-questions domain: plain questions over a user's own tables, with known truth.

``judge`` decides whether a written answer states a question's truth.
"""
