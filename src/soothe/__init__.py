"""Soothe: a terminal workbench for goal-driven LLM agents on local models."""

__version__ = "0.1.0"
