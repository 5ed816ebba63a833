"""Compatibility names: the LangSmith and checkpoint code now lives by idea.

* run trees and their JSON exports: :mod:`liveguard.readers.langsmith`;
* checkpoint histories: :mod:`liveguard.readers.checkpoints`;
* listing a project's runs and pushing feedback: :mod:`liveguard.integrations.langsmith`.

Importing this module imports no framework.
"""

from __future__ import annotations

from liveguard.integrations.langsmith import list_project_trajectories, push_feedback
from liveguard.readers.checkpoints import thread_to_trajectory
from liveguard.readers.langsmith import MAX_DEPTH, MESSAGE_KEYS, load_export, run_to_dict, run_to_trajectory

__all__ = [
    "MAX_DEPTH",
    "MESSAGE_KEYS",
    "list_project_trajectories",
    "load_export",
    "push_feedback",
    "run_to_dict",
    "run_to_trajectory",
    "thread_to_trajectory",
]
