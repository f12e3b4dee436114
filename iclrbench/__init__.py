"""iclrbench: a Jupyter-first research workbench for ICLR 2025 papers.

Importing the package is cheap: torch, plotly and the paper modules load only when used.
"""
__version__ = "0.1.0"
