"""Steps 1-4, what a page is: its markup cut and extracted to the main text, what it shows beside
it (its visible text, its chrome, the lines outside its text), its tokens, features and weights,
and from them its fingerprint (simhash), sketch and LSI terms: `fingerprint.Fingerprinted`.
Functions of the page and the settings alone (they also run in worker processes)."""
