"""structperc models inside spaCy (`structperc.spacy_component`, which spaCy's entry points name): the
pipeline component (`component`), the tokenizer (`tokenizer`) and how both get their model
(`loading`). Absolute imports only: ``spacy`` here is always the real spaCy."""
