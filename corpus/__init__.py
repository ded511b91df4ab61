"""The incident corpus: the categories spec and the incidents that explain each failure.

Data lives in YAML files (`categories.yaml`, `incidents/*.yaml`); this package reads and checks them.
"""

from ._catalogue import (add_to_catalogue, catalogue_counts, catalogue_digest, catalogue_dir, check_catalogue,
                         load_catalogue)
from ._check import Problem, check_corpus, corpus_stats
from ._mine import Template, mine_tree
from ._load import (builtin_dir, incident_files, load_categories, load_corpus, load_lifecycle, load_missing, load_options,
                    load_precedence, load_recovery, parse_incident,
                    parse_incidents)
from ._manual import (INDEX_PAGE, Manual, build_manual, category_page, incident_anchor, incident_link, options_named,
                      render_manual, section_anchor)
from ._types import (ENGINES, TRIAGE_CLASSES, UNKNOWN, Category, CodePath, Corpus, Incident, Lifecycle, MessagePath,
                     OptionDoc, PrintoutBlock, Signature)

__all__ = [
    "Category", "CodePath", "Corpus", "ENGINES", "INDEX_PAGE", "Incident", "Lifecycle", "Manual", "MessagePath", "OptionDoc",
    "PrintoutBlock", "Problem", "Signature", "TRIAGE_CLASSES", "UNKNOWN", "Template", "add_to_catalogue", "build_manual",
    "builtin_dir", "catalogue_counts", "catalogue_digest", "catalogue_dir", "category_page", "check_catalogue",
    "check_corpus", "corpus_stats",
    "incident_anchor", "incident_files", "incident_link", "load_categories", "load_catalogue", "load_corpus", "load_lifecycle",
    "load_missing", "load_options", "load_precedence", "load_recovery", "mine_tree", "options_named", "parse_incident",
    "parse_incidents", "render_manual", "section_anchor",
]
