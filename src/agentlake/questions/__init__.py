"""The data-questions domain: plain questions over a user's own tables, with known truth.

``pack`` loads a question pack (datasets with pinned hashes, questions with truth SQL), builds
a lake from it and computes each truth; ``judge`` decides whether a written answer states it.
"""
