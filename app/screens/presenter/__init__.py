"""The Presenter screen (``/presenter``)."""
