"""structperc on a Dask cluster (the optional extra ``structperc[dask]``); Dask itself is imported only
when a cluster is asked for.

Two floors in one room. Below the faces: the connection (`client`: a scheduler address, ``local:N`` or a
`distributed.Client`), the runner of parameter mixing's shard epochs as Dask tasks (`training`), and the
workers that read and featurize their own parts of the training input (`parts`). Over the faces: tagging
of files, bags and data frames whose model is loaded once per worker (`tagging`, `worker`)."""
