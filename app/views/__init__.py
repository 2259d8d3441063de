"""The app's pages, one module each, read top to bottom as the screen is drawn.

A page is a function (``st.Page(function)``, listed in ``app/navigation.py``);
what the panes draw lives in the modules beside this folder.
"""
