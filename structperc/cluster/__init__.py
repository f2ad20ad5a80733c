"""structperc on a Dask cluster (the optional extra ``structperc[dask]``): a scheduler address or a
`LocalCluster` behind one call (`client`), and tagging of files, bags and data frames whose model is
loaded once per worker (`tagging`). Dask itself is imported only when a cluster is asked for."""
