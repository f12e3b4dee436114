"""Views: the `Explorer` base class and the house plotly style (`explorer`), and the docs' static views generated
from an explorer's own controls (`static`)."""
