# verif/mutate.mk - make mutate: mutation testing of the RTL checks (scripts/mutate.py).
#
# Each mutation of verif/mutate/mutations.txt is applied to a scratch copy of the tree
# (build/mutate/tree, never the working tree); the RTL entries of `make test` that exercise
# the mutated unit run first, then the others and `make formal` if it survives. Report:
# build/mutate/report.md and report.json. Hours for the whole list on 2 cores, so not part
# of `make test`. Options: MUTATE_SEED, MUTATE_ONLY=id,id, MUTATE_JOBS=1, MUTATE_BUDGET=s,
# MUTATE_TIMEOUT=s, MUTATE_REST=0, MUTATE_FORMAL=0, MUTATE_RESUME=1 (see scripts/mutate.py).

.PHONY: mutate mutate-entries
mutate: deps
	@./scripts/mutate.py

# the entries `make test` runs, one per line (scripts/mutate.py keeps the RTL ones)
mutate-entries:
	@printf '%s\n' $(TEST_ENTRIES)
