"""The unpresented-answers recovery policy: a held chat turn's committed answer is presented once."""

__version__ = "0.1.0"

__all__ = ["__version__"]
