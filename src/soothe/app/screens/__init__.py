"""Screens of the workbench: main, help, threads and the small dialogs."""
