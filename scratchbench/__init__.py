"""scratchbench's shared ground: paths, errors, figure declarations and the site model.

The bottom layer (see ARCHITECTURE.md): every other part imports it; it imports none of
them.  Site configs import the site model from here (``scratchbench.sites``).
"""

__version__ = "0.2.0"
