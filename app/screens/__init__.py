"""The app's screens, one folder each: ``screens/<name>/page.py`` draws the page at
``/<name>`` (the function ``<name>_page``, listed in ``app/navigation.py``), read top to
bottom as the screen is drawn; the panes only that screen draws sit beside it, those
more than one draws in ``app/panes/``.
"""
