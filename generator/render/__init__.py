"""Stage 3, render and write: a Plan -> the files of a stack folder (``files``, ``escape``) -> ``stacks/<name>/`` (``stackdir``)."""
