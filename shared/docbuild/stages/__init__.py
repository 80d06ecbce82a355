"""The build's stages, in the order :mod:`docbuild.pipeline` runs them: :mod:`.discover` (the
source files), :mod:`.parse` (documents, by the readers of :mod:`docbuild.readers`),
:mod:`.chunk`, embed (:mod:`docbuild.embedding`), :mod:`.consolidate` (Parquet),
:mod:`.snapshot` (the DuckLake history), :mod:`.materialize` (the runtime database) and
:mod:`.package` (the self-contained server folder)."""
