"""Training on a Dask cluster below the faces: the connection (`client`: an address or ``local:N``) and
the runner of parameter mixing's shard epochs as Dask tasks (`dask_training`). ``structperc.train`` runs
the mixing; `structperc.fitting` picks this runner for ``--dask``; the tagging faces reuse the client
(`structperc.cluster`). Dask is imported only when a cluster is asked for (extra ``structperc[dask]``)."""
