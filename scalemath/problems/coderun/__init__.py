"""Hands-on problems graded by running the student's code in a sandboxed child process (issue 29).

:mod:`.sandbox` runs a submission in a fresh, limited child (:mod:`._child` is that child's bootstrap);
:mod:`.tasks` states the tasks; :mod:`.grade` grades a submission against its task.
"""

from .grade import VERDICTS, CodeGrade, grade_code
from .sandbox import Limits, RunResult, run_submission
from .tasks import TASKS, HandsOnTask, make_task, task_from_json

__all__ = ["VERDICTS", "CodeGrade", "grade_code", "Limits", "RunResult", "run_submission", "TASKS", "HandsOnTask",
           "make_task", "task_from_json"]
