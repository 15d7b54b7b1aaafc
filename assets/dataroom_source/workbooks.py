"""Spreadsheet documents of the dataroom, as data.

Convention on numbers. Text extraction reads the raw value of a cell, not its formatted display, so a
numeric cell holding 29880 extracts as ``29880`` (or ``29880.0``), never as ``29,880``. Financial
statement tables therefore keep real numbers (they are what an analyst would sum), and every figure that
the question set relies on is *also* stated in a text document (audit report, management report, board
deck) or kept as a display string here. Workbooks that are exports from other systems (cap table,
KPI dashboard, price book, HR roster) store their figures as display strings, as those exports do, so
``"2,187,500"`` and ``"5.9%"`` extract exactly as written.
"""

from __future__ import annotations

from render import Sheet

# --------------------------------------------------------------------------------------------
# Financial statements (USD thousands), FY2022–FY2025
# --------------------------------------------------------------------------------------------

YEARS = ["FY2022", "FY2023", "FY2024", "FY2025"]

INCOME = {  # revenue and expense lines; subtotals are computed and checked below
    "Hardware revenue": [9840, 11920, 13105, 14260],
    "Subscription revenue": [6210, 9870, 14460, 19300],
    "Services revenue": [1450, 1930, 2315, 2640],
    "Cost of revenue — hardware": [5900, 6790, 7210, 7720],
    "Cost of revenue — subscription": [1860, 2620, 3520, 4310],
    "Cost of revenue — services": [1165, 1740, 2110, 2560],
    "Research and development": [5100, 6200, 7350, 8400],
    "Sales and marketing": [4900, 6050, 7420, 8690],
    "General and administrative": [2600, 3010, 3480, 3870],
    "Other income (expense), net": [90, 820, 410, 60],
    "Provision for income taxes": [40, 55, 70, 40],
}

BALANCE = {  # FY2023, FY2024, FY2025
    "Cash and cash equivalents": [24310, 25870, 23420],
    "Accounts receivable, net": [3380, 5240, 6380],
    "Inventory": [2410, 3960, 4520],
    "Prepaid expenses and other current assets": [520, 1180, 1310],
    "Property and equipment, net": [2580, 4490, 6040],
    "Operating lease right-of-use assets": [2770, 2410, 2050],
    "Deferred contract costs and other assets": [190, 1000, 3280],
    "Accounts payable": [1610, 1980, 2270],
    "Accrued expenses and other current liabilities": [1780, 2140, 2610],
    "Deferred revenue, current": [5920, 7640, 9960],
    "Current portion of long-term debt": [0, 1500, 3000],
    "Long-term debt, net of current portion": [0, 4500, 1500],
    "Operating lease liabilities, non-current": [2950, 2620, 2270],
    "Convertible preferred stock": [36280, 36280, 36280],
    "Common stock and additional paid-in capital": [5890, 6630, 7580],
    "Accumulated deficit": [-18270, -19140, -18470],
}

CASHFLOW = {
    "Net income (loss)": [-3975, -1925, -870, 670],
    "Depreciation and amortisation": [610, 780, 940, 1120],
    "Stock-based compensation": [420, 560, 690, 830],
    "Changes in operating assets and liabilities": [-435, -2055, -2740, -1380],
    "Purchases of property and equipment": [-1120, -1510, -2510, -2310],
    "Proceeds from preferred stock, net of issuance costs": [24830, 0, 0, 0],
    "Proceeds from (repayment of) term loan": [0, 0, 6000, -1500],
    "Proceeds from exercise of stock options": [0, 0, 50, 120],
    "Cash at beginning of year": [8130, 28460, 24310, 25870],
}

QUARTERS = {  # USD thousands
    "Q1 2024": 6720, "Q2 2024": 7210, "Q3 2024": 7560, "Q4 2024": 8390,
    "Q1 2025": 8210, "Q2 2025": 8760, "Q3 2025": 9380, "Q4 2025": 9850,
}


def _income_rows() -> list[list]:
    g = INCOME
    col = lambda *names: [sum(g[n][i] for n in names) for i in range(4)]  # noqa: E731
    revenue = col("Hardware revenue", "Subscription revenue", "Services revenue")
    cogs = col("Cost of revenue — hardware", "Cost of revenue — subscription",
               "Cost of revenue — services")
    gross = [r - c for r, c in zip(revenue, cogs)]
    opex = col("Research and development", "Sales and marketing", "General and administrative")
    op = [a - b for a, b in zip(gross, opex)]
    pretax = [a + b for a, b in zip(op, g["Other income (expense), net"])]
    net = [a - b for a, b in zip(pretax, g["Provision for income taxes"])]
    assert revenue == [17500, 23720, 29880, 36200], revenue
    assert net == CASHFLOW["Net income (loss)"], net
    rows = [["USD thousands", *YEARS]]
    rows += [[n, *g[n]] for n in ("Hardware revenue", "Subscription revenue", "Services revenue")]
    rows.append(["Total revenue", *revenue])
    rows += [[n, *g[n]] for n in ("Cost of revenue — hardware", "Cost of revenue — subscription",
                                   "Cost of revenue — services")]
    rows.append(["Total cost of revenue", *cogs])
    rows.append(["Gross profit", *gross])
    rows.append(["Gross margin %", *[round(100 * a / b, 1) for a, b in zip(gross, revenue)]])
    rows += [[n, *g[n]] for n in ("Research and development", "Sales and marketing",
                                   "General and administrative")]
    rows.append(["Total operating expenses", *opex])
    rows.append(["Operating income (loss)", *op])
    rows.append(["Other income (expense), net", *g["Other income (expense), net"]])
    rows.append(["Income (loss) before taxes", *pretax])
    rows.append(["Provision for income taxes", *g["Provision for income taxes"]])
    rows.append(["Net income (loss)", *net])
    return rows


def _balance_rows() -> list[list]:
    b = BALANCE
    assets = ["Cash and cash equivalents", "Accounts receivable, net", "Inventory",
              "Prepaid expenses and other current assets", "Property and equipment, net",
              "Operating lease right-of-use assets", "Deferred contract costs and other assets"]
    liabs = ["Accounts payable", "Accrued expenses and other current liabilities",
             "Deferred revenue, current", "Current portion of long-term debt",
             "Long-term debt, net of current portion", "Operating lease liabilities, non-current"]
    equity = ["Common stock and additional paid-in capital", "Accumulated deficit"]
    tot = lambda names: [sum(b[n][i] for n in names) for i in range(3)]  # noqa: E731
    ta, tl, te = tot(assets), tot(liabs), tot(equity)
    total_le = [tl[i] + b["Convertible preferred stock"][i] + te[i] for i in range(3)]
    assert ta == total_le, (ta, total_le)
    rows = [["USD thousands, 31 December", "FY2023", "FY2024", "FY2025"]]
    rows += [[n, *b[n]] for n in assets] + [["Total assets", *ta]]
    rows += [[n, *b[n]] for n in liabs] + [["Total liabilities", *tl]]
    rows.append(["Convertible preferred stock", *b["Convertible preferred stock"]])
    rows += [[n, *b[n]] for n in equity] + [["Total stockholders' deficit", *te]]
    rows.append(["Total liabilities, preferred stock and stockholders' deficit", *total_le])
    return rows


def _cashflow_rows() -> list[list]:
    c = CASHFLOW
    ops = ["Net income (loss)", "Depreciation and amortisation", "Stock-based compensation",
           "Changes in operating assets and liabilities"]
    fin = ["Proceeds from preferred stock, net of issuance costs",
           "Proceeds from (repayment of) term loan", "Proceeds from exercise of stock options"]
    cfo = [sum(c[n][i] for n in ops) for i in range(4)]
    cfi = c["Purchases of property and equipment"]
    cff = [sum(c[n][i] for n in fin) for i in range(4)]
    end = [c["Cash at beginning of year"][i] + cfo[i] + cfi[i] + cff[i] for i in range(4)]
    assert end == [28460, 24310, 25870, 23420], end
    assert end[1:] == BALANCE["Cash and cash equivalents"]
    rows = [["USD thousands", *YEARS]]
    rows += [[n, *c[n]] for n in ops] + [["Net cash from operating activities", *cfo]]
    rows += [["Purchases of property and equipment", *cfi],
             ["Net cash used in investing activities", *cfi]]
    rows += [[n, *c[n]] for n in fin] + [["Net cash from financing activities", *cff]]
    rows += [["Cash at beginning of year", *c["Cash at beginning of year"]],
             ["Cash at end of year", *end]]
    return rows


def financial_statements() -> list[Sheet]:
    readme = [
        ["Quillmoor Hydrometrics, Inc. — consolidated financial statements FY2022–FY2025"],
        ["Prepared by: Finance (Benedikt Oyelaran, Controller). Version: 23 January 2026."],
        ["All amounts in thousands of US dollars unless stated otherwise."],
        ["FY2023 and FY2024 are audited by Pellworth & Strand LLP (report dated 28 March 2025)."],
        ["FY2022 was audited by the predecessor auditor, Halloway Brandt LLP."],
        ["FY2025 figures are preliminary and unaudited; they reflect the Veldhaven Phase 2 "
         "deferral described in the FY2025 management report (FINAL)."],
        ["FY2022 revenue was $17.5 million; FY2023 $23.7 million; FY2024 $29.9 million; "
         "FY2025 $36.2 million."],
        ["FY2022 net loss was $3.98 million. FY2022 cash flows include the Series B "
         "financing, which closed on 15 September 2022."],
    ]
    quarters = [["USD thousands", "Revenue"]] + [[q, v] for q, v in QUARTERS.items()]
    assert sum(list(QUARTERS.values())[4:]) == 36200 and sum(list(QUARTERS.values())[:4]) == 29880
    return [
        Sheet("Read me", readme, widths=[110], bold_rows=(0,), freeze=None),
        Sheet("Income Statement", _income_rows(), widths=[38, 12, 12, 12, 12]),
        Sheet("Balance Sheet", _balance_rows(), widths=[58, 12, 12, 12]),
        Sheet("Cash Flow", _cashflow_rows(), widths=[50, 12, 12, 12, 12]),
        Sheet("Revenue by Quarter", quarters, widths=[16, 12]),
    ]


# --------------------------------------------------------------------------------------------
# KPI dashboard (export from the BI tool: values are display strings)
# --------------------------------------------------------------------------------------------

KPI_QUARTERS = ["Q1 2024", "Q2 2024", "Q3 2024", "Q4 2024", "Q1 2025", "Q2 2025", "Q3 2025",
                "Q4 2025"]
KPIS = [
    ("ARR at quarter end ($M)", "13.10 14.00 15.39 16.15 17.94 19.48 21.10 22.40"),
    ("Active customers", "24 26 28 30 30 32 33 35"),
    ("Net revenue retention (TTM)", "124% 122% 121% 120% 118% 117% 117% 117%"),
    ("Gross revenue churn (TTM)", "2.6% 2.8% 3.1% 2.9% 4.4% 5.6% 5.9% 4.7%"),
    ("New and expansion ARR booked ($M)", "1.05 1.22 1.48 1.64 2.35 1.71 1.32 1.18"),
    ("Sensors under management", "66,200 70,900 74,800 78,300 82,900 87,600 91,500 96,100"),
    ("Platform availability", "99.97% 99.99% 99.98% 99.96% 99.96% 99.99% 99.85% 99.98%"),
]


def kpi_dashboard() -> list[Sheet]:
    quarterly = [["KPI", *KPI_QUARTERS]] + [[name, *vals.split()] for name, vals in KPIS]
    bridge = [
        ["ARR bridge FY2025", "USD"],
        ["Opening ARR, 31 December 2024", "$16,150,000"],
        ["New logos (7 customers)", "$3,476,000"],
        ["Expansion", "$3,531,100"],
        ["Contraction", "($333,000)"],
        ["Churn (Hollin Ridge Water District, Cedar Hollow Municipal Utilities)", "($424,000)"],
        ["Closing ARR, 31 December 2025", "$22,400,100"],
        ["Net revenue retention FY2025", "117.2%"],
        ["Gross revenue churn FY2025", "4.7%"],
    ]
    definitions = [
        ["Term", "Definition"],
        ["ARR", "Annualised contracted subscription fees of active customers at period end; "
                "hardware and services excluded. EUR and GBP contracts are translated at budget "
                "rates of EUR 1 = USD 1.08 and GBP 1 = USD 1.27."],
        ["Gross revenue churn (TTM)", "ARR lost to churn and contraction over the trailing twelve "
                                      "months divided by ARR at the start of that period. Each "
                                      "customer's loss is counted once."],
        ["Net revenue retention (TTM)", "ARR today from customers active twelve months ago divided "
                                        "by their ARR twelve months ago."],
        ["Restatement note", "Q3 2025 gross revenue churn restated on 4 November 2025 from 6.8% to "
                             "5.9%: the Cedar Hollow churn of $138,000 had been counted twice. "
                             "Churned and contracted ARR for the trailing twelve months is $908,000 "
                             "on an opening ARR of $15,390,000."],
    ]
    return [
        Sheet("Quarterly KPIs", quarterly, widths=[36] + [11] * 8),
        Sheet("ARR Bridge FY2025", bridge, widths=[70, 16]),
        Sheet("Definitions", definitions, widths=[28, 110]),
    ]


# --------------------------------------------------------------------------------------------
# FY2026 budget (numbers; a planning model)
# --------------------------------------------------------------------------------------------


def budget_fy2026() -> list[Sheet]:
    q = ["Q1 2026", "Q2 2026", "Q3 2026", "Q4 2026"]
    lines = {
        "Hardware revenue — TideLine 3": [3300, 3500, 2900, 2700],
        "Hardware revenue — TideLine 4": [0, 0, 900, 1600],
        "Subscription revenue": [5850, 6200, 6450, 7050],
        "Services revenue": [750, 900, 1250, 1150],
        "Cost of revenue": [3900, 4150, 4450, 4600],
        "Research and development": [2350, 2450, 2500, 2550],
        "Sales and marketing": [2300, 2400, 2450, 2550],
        "General and administrative": [1050, 1050, 1100, 1150],
    }
    rev_names = [n for n in lines if "revenue" in n and "Cost" not in n]
    revenue = [sum(lines[n][i] for n in rev_names) for i in range(4)]
    assert sum(revenue) == 44500, sum(revenue)
    opex_names = ["Research and development", "Sales and marketing", "General and administrative"]
    op = [revenue[i] - lines["Cost of revenue"][i] - sum(lines[n][i] for n in opex_names)
          for i in range(4)]
    rows = [["USD thousands", *q, "FY2026"]]
    for n, v in lines.items():
        rows.append([n, *v, sum(v)])
        if n == "Services revenue":
            rows.append(["Total revenue", *revenue, sum(revenue)])
    rows.append(["Operating income", *op, sum(op)])
    headcount = [["Department", "31 Dec 2025 actual", "31 Dec 2026 plan"],
                 ["Software engineering", 58, 66], ["Hardware engineering", 21, 25],
                 ["Data science", 11, 14], ["Sales", 27, 32], ["Marketing", 9, 11],
                 ["Customer success and field services", 37, 45],
                 ["Manufacturing and supply chain", 24, 27], ["General and administrative", 25, 28]]
    assert sum(r[1] for r in headcount[1:]) == 212 and sum(r[2] for r in headcount[1:]) == 248
    headcount.append(["Total", 212, 248])
    assumptions = [
        ["Assumption", "Value"],
        ["Status", "Draft for Board approval in February 2026"],
        ["TideLine 4 general availability", "Q3 2026 (per roadmap v2)"],
        ["TideLine 3 unit cost from Brannock", "$114.85 from 1 January 2026 (3% volume reduction)"],
        ["Greater Marlow Utilities District renewal", "Assumed lost at 31 December 2026 "
                                                      "(no FY2026 revenue impact)"],
        ["FX budget rates", "EUR 1 = USD 1.08; GBP 1 = USD 1.27"],
    ]
    return [
        Sheet("P&L by Quarter", rows, widths=[36, 11, 11, 11, 11, 11]),
        Sheet("Headcount Plan", headcount, widths=[38, 20, 18], number_format="0"),
        Sheet("Assumptions", assumptions, widths=[44, 80]),
    ]


# --------------------------------------------------------------------------------------------
# Cap table at 30 September 2025 (export from the equity-management tool: display strings)
# --------------------------------------------------------------------------------------------

HOLDINGS = [  # holder, class, shares, price paid per share (None for common / options)
    ("Marguerite Ellingboe", "Common", 3_200_000, None),
    ("Tobias Renwick-Aso", "Common", 2_900_000, None),
    ("Employees and former employees (exercised options)", "Common", 610_000, None),
    ("Northshore Angels Fund I", "Series Seed Preferred", 900_000, 1.10),
    ("Halvard Lindqvist", "Series Seed Preferred", 300_000, 1.10),
    ("Other seed investors (7 holders)", "Series Seed Preferred", 250_000, 1.10),
    ("Fernhill Ventures II, L.P.", "Series A Preferred", 2_187_500, 3.20),
    ("Lakehead Growth Fund", "Series A Preferred", 937_500, 3.20),
    ("Basalt Peak Capital III, L.P.", "Series B Preferred", 2_016_000, 8.68),
    ("Fernhill Ventures II, L.P.", "Series B Preferred", 576_000, 8.68),
    ("Wexcombe Pipe & Valve Co.", "Series B Preferred", 288_000, 8.68),
    ("Cobalt Ridge Bank (warrant)", "Series B Preferred warrant", 45_000, None),
    ("2016 Equity Incentive Plan — options outstanding", "Options", 1_735_000, None),
    ("2016 Equity Incentive Plan — available for grant", "Option pool", 665_000, None),
]

ROUNDS = [
    ("Series Seed", "12 April 2017", "$1.10", 1_450_000, "Northshore Angels Fund I"),
    ("Series A", "21 June 2019", "$3.20", 3_125_000, "Fernhill Ventures II, L.P."),
    ("Series B", "15 September 2022", "$8.68", 2_880_000, "Basalt Peak Capital III, L.P."),
]


def cap_table() -> list[Sheet]:
    fd = sum(h[2] for h in HOLDINGS)
    assert fd == 16_610_000, fd
    summary = [["Holder", "Class", "Shares", "% fully diluted", "Amount invested"]]
    for holder, cls, shares, price in HOLDINGS:
        invested = f"${shares * price:,.2f}" if price else ""
        summary.append([holder, cls, f"{shares:,}", f"{100 * shares / fd:.2f}%", invested])
    summary.append(["Total fully diluted", "", f"{fd:,}", "100.00%", ""])
    rounds = [["Round", "Closing date", "Price per share", "Shares issued", "Gross proceeds",
               "Lead investor"]]
    for name, date, price, shares, lead in ROUNDS:
        gross = shares * float(price.strip("$"))
        rounds.append([name, date, price, f"{shares:,}", f"${gross:,.2f}", lead])
    plan = [
        ["2016 Equity Incentive Plan", "Shares"],
        ["Shares reserved and unissued at 30 September 2025", "2,400,000"],
        ["Options outstanding", "1,735,000"],
        ["Available for future grant", "665,000"],
        ["Weighted-average exercise price of outstanding options", "$1.71"],
        ["Current 409A fair market value (valuation date 30 June 2025)", "$2.61"],
        ["Note", "Reserve changes approved after 30 September 2025 are not reflected in this "
                 "export; see Board minutes."],
    ]
    warrants = [["Holder", "Security", "Shares", "Exercise price", "Issued", "Expires"],
                ["Cobalt Ridge Bank", "Series B Preferred", "45,000", "$8.68", "28 February 2024",
                 "28 February 2034"]]
    return [
        Sheet("Summary", summary, widths=[52, 28, 14, 16, 18]),
        Sheet("Preferred Rounds", rounds, widths=[14, 20, 16, 16, 18, 32]),
        Sheet("Option Plan", plan, widths=[62, 60]),
        Sheet("Warrants", warrants, widths=[20, 20, 10, 14, 18, 18]),
    ]


# --------------------------------------------------------------------------------------------
# Price book 2025
# --------------------------------------------------------------------------------------------


def pricing() -> list[Sheet]:
    hardware = [
        ["SKU", "Product", "List price USD", "List price EUR", "List price GBP", "Notes"],
        ["TL3-STD", "TideLine 3 acoustic sensor", "$460.00", "€425.00", "£365.00",
         "Ten-year battery; magnetic valve mount"],
        ["TL3-HYD", "TideLine 3 hydrant adapter kit", "$38.00", "€35.00", "£30.00", ""],
        ["MM-GW2", "MeterMesh gateway, cellular", "$2,950.00", "€2,730.00", "£2,340.00",
         "Up to 1,500 sensors per gateway"],
        ["MM-GW2F", "MeterMesh gateway, fibre backhaul", "$3,400.00", "€3,150.00", "£2,700.00", ""],
    ]
    subscriptions = [
        ["Module", "Unit", "Price USD", "Notes"],
        ["Cistern Detect", "per sensor per month", "$14.00", "Leak localisation and work orders"],
        ["Cistern Pressure", "per monitored point per month", "$6.50", "Transient capture at 128 Hz"],
        ["Platform fee — up to 2,000 sensors", "per year", "$60,000", ""],
        ["Platform fee — 2,001 to 10,000 sensors", "per year", "$150,000", ""],
        ["Platform fee — above 10,000 sensors", "per year", "$240,000", ""],
    ]
    services = [
        ["Service", "Unit", "Price USD"],
        ["Sensor installation", "per sensor", "$85.00"],
        ["Gateway installation and commissioning", "per gateway", "$1,200.00"],
        ["Operator training (up to 12 people)", "per day", "$2,400.00"],
        ["Leak survey with field crew", "per crew day", "$3,100.00"],
    ]
    discounts = [
        ["Rule", "Discount", "Approval"],
        ["Hardware volume of 2,000 sensors or more in one order", "up to 10% off list",
         "VP Sales"],
        ["Three-year subscription commitment", "8% off subscription list", "VP Sales"],
        ["Anything beyond the above", "case by case", "CFO and CEO"],
        ["Public-sector customers in the UK", "check most-favoured-customer commitments "
                                               "before quoting (Trentholm clause 11.2)", "General Counsel"],
    ]
    return [
        Sheet("Hardware", hardware, widths=[10, 34, 16, 16, 16, 40]),
        Sheet("Subscriptions", subscriptions, widths=[40, 30, 12, 36]),
        Sheet("Services", services, widths=[40, 16, 12]),
        Sheet("Discount Policy", discounts, widths=[54, 60, 18]),
    ]


# --------------------------------------------------------------------------------------------
# Key employees (HR roster export: text)
# --------------------------------------------------------------------------------------------

KEY_EMPLOYEES = [
    # name, title, start date, location, base salary, bonus target, options held, reports to
    ("Marguerite Ellingboe", "Chief Executive Officer", "2016-03-14", "Duluth", "$325,000", "40%",
     "0", "Board"),
    ("Tobias Renwick-Aso", "Chief Technology Officer", "2016-03-14", "Duluth", "$295,000", "30%",
     "0", "CEO"),
    ("Delphine Achterberg", "Chief Financial Officer", "2022-06-06", "Duluth", "$290,000", "35%",
     "265,000", "CEO"),
    ("Rafael Quintanilla-Moss", "VP Sales, North America", "2020-01-13", "Chicago (remote)",
     "$230,000", "60% (commission)", "140,000", "CEO"),
    ("Annelies Brouwer-Tak", "Managing Director, Europe", "2021-07-01", "Rotterdam", "€185,000",
     "40%", "95,000", "CEO"),
    ("Priya Haldane", "General Counsel and Corporate Secretary", "2023-02-20", "Minneapolis (remote)",
     "$265,000", "25%", "110,000", "CEO"),
    ("Oluwaseun Barrow", "VP People", "2022-04-04", "Duluth", "$205,000", "20%", "70,000", "CEO"),
    ("Henrik Solvang", "VP Engineering", "2019-09-02", "Duluth", "$255,000", "25%", "150,000", "CTO"),
    ("Kofi Ansah-Lindgren", "VP Operations and Supply Chain", "2020-05-18", "Duluth", "$215,000",
     "20%", "90,000", "CEO"),
    ("Mei-Lin Dorsey", "Head of Security and Compliance", "2023-10-02", "Denver (remote)",
     "$210,000", "15%", "55,000", "CTO"),
    ("Benedikt Oyelaran", "Controller", "2023-01-09", "Duluth", "$165,000", "15%", "30,000", "CFO"),
    ("Lindiwe Okafor-Basset", "Director of Sales, Industrial", "2022-11-07", "Houston (remote)",
     "$175,000", "55% (commission)", "45,000", "VP Sales"),
    ("Dashiell Harrowby", "Director of Sales, Central Region", "2025-02-03", "Duluth", "$170,000",
     "55% (commission)", "40,000", "VP Sales"),
]


def key_employees() -> list[Sheet]:
    head = ["Name", "Title", "Start date", "Location", "Base salary", "Bonus target",
            "Options held", "Reports to"]
    retention = [
        ["Name", "Change-of-control terms"],
        ["Marguerite Ellingboe", "Double-trigger: 100% acceleration of unvested equity on "
                                 "termination without cause within 12 months after a change of "
                                 "control; 12 months' base salary severance."],
        ["Tobias Renwick-Aso", "Same as CEO."],
        ["Delphine Achterberg", "Double-trigger: 50% acceleration; 9 months' base salary severance."],
        ["All other listed employees", "Double-trigger: 25% acceleration; 6 months' base salary "
                                       "severance."],
    ]
    return [
        Sheet("Key Employees", [head] + [list(r) for r in KEY_EMPLOYEES],
              widths=[24, 40, 12, 22, 14, 18, 13, 12]),
        Sheet("Change of Control", retention, widths=[28, 110]),
    ]


# --------------------------------------------------------------------------------------------
# Registry: archive path -> (title, author, sheets)
# --------------------------------------------------------------------------------------------

WORKBOOKS = {
    "01_corporate/cap_table_2025-09-30.xlsx":
        ("Capitalisation table as of 30 September 2025", "Priya Haldane", cap_table),
    "02_financials/financial_statements_FY2022-FY2025.xlsx":
        ("Consolidated financial statements FY2022–FY2025", "Benedikt Oyelaran",
         financial_statements),
    "02_financials/kpi_dashboard_2025.xlsx":
        ("KPI dashboard 2024–2025", "Delphine Achterberg", kpi_dashboard),
    "02_financials/budget_FY2026_draft.xlsx":
        ("FY2026 budget — draft", "Delphine Achterberg", budget_fy2026),
    "04_commercial/price_book_2025.xlsx":
        ("Price book 2025", "Rafael Quintanilla-Moss", pricing),
    "05_hr/key_employees.xlsx":
        ("Key employees and change-of-control terms", "Oluwaseun Barrow", key_employees),
}
