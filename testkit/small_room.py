"""The small dataroom many tests and the sweep bench run on: five short files, one fact each."""

from __future__ import annotations

from pathlib import Path

SMALL_DATAROOM = {
    "finance/revenue_2025.md": "# Revenue 2025\n\nTotal revenue for fiscal 2025 was 48.2 million euros, "
    "up 17 percent. Recurring subscription revenue made up 81 percent of the total.",
    "finance/costs.md": "# Operating costs\n\nHeadcount costs rose to 22.4 million euros. Cloud hosting "
    "spend fell after the migration to the Frankfurt data centre.",
    "legal/lease.txt": "The office lease at 14 Harbour Street runs until 31 March 2029. Rent is payable "
    "quarterly in advance. The landlord may not terminate before the break date.",
    "hr/handbook.md": "# Employee handbook\n\nStaff receive 28 days of paid holiday. Parental leave is "
    "sixteen weeks at full pay. Remote work is allowed three days a week.",
    "tech/security.md": "# Security\n\nAll laptops use full-disk encryption. Production access requires "
    "hardware security keys. Penetration tests run twice a year.",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
