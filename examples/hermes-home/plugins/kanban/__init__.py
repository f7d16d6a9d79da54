"""Example Hermes plugin that only ships a skill (kanban:kanban-board)."""
from pathlib import Path


def register(ctx):
    skill = Path(__file__).parent / "skills" / "kanban-board" / "SKILL.md"
    ctx.register_skill(
        "kanban-board",
        skill,
        description="Manage a Markdown kanban board: add, move and archive cards.",
    )
