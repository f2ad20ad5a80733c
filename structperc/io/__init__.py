"""Corpus readers and writers: files in, flat token columns out (the first step of the data flow)."""
from structperc.io.conll import read_conll, read_conllu, read_corpus, write_conll
from structperc.io.corpus import Corpus

__all__ = ["Corpus", "read_conll", "read_conllu", "read_corpus", "write_conll"]
