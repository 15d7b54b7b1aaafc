"""The question set for the built-in dataroom.

Each question: ``id``, ``question``, ``answer``, ``must_facts`` (short strings that a correct answer
contains and that occur verbatim — case-insensitive, whitespace-normalised — in the extracted text of at
least one gold file), ``gold_files`` (paths relative to the dataroom root), ``type``. Figures that a
correct answer must compute and that occur in no document are listed in ``computed_facts``.

Types:

- literal      the question reuses the document's own wording; grep finds it.
- paraphrased  the question uses other words (no rare keyword of the answer passage); lexical search
               struggles, dense retrieval should not.
- multihop     the answer combines facts from two or more documents (an amendment overriding a
               contract, an e-mail correcting a deck, a minute changing a cap table).
- aggregate    the answer sums, counts or lists over many rows or documents.
- negative     the question carries a false premise; the answer corrects it.
"""

QUESTION_TYPES = ("literal", "paraphrased", "multihop", "aggregate", "negative")

L, P, M, A, N = QUESTION_TYPES

MSA = "03_legal/harwick_falls_msa_2022.pdf"
AMEND = "03_legal/harwick_falls_amendment_1_2025.docx"
BRANNOCK = "03_legal/brannock_manufacturing_and_supply_agreement_2023.pdf"
LOAN = "03_legal/cobalt_ridge_loan_summary.pdf"
LITIGATION = "03_legal/litigation_summary_2025-12-15.docx"
TRENTHOLM = "03_legal/trentholm_framework_agreement_2023.pdf"
VELDHAVEN = "03_legal/veldhaven_services_and_supply_agreement_2025.pdf"
REGISTER = "03_legal/material_contracts_register.csv"
PATENTS = "03_legal/patent_portfolio.csv"
AUDIT = "02_financials/audit_report_FY2024.pdf"
FINAL = "02_financials/FY2025_management_report_FINAL.docx"
DRAFT = "02_financials/FY2025_management_report_DRAFT_v1.docx"
STATEMENTS = "02_financials/financial_statements_FY2022-FY2025.xlsx"
KPI = "02_financials/kpi_dashboard_2025.xlsx"
BUDGET = "02_financials/budget_FY2026_draft.xlsx"
AR = "02_financials/ar_aging_2025-12-31.csv"
DECK = "01_corporate/board_deck_Q3_2025.pdf"
CAP = "01_corporate/cap_table_2025-09-30.xlsx"
MIN_JAN = "01_corporate/board_minutes_2025-01-23.docx"
MIN_APR = "01_corporate/board_minutes_2025-04-17.docx"
MIN_JUL = "01_corporate/board_minutes_2025-07-24.docx"
MIN_OCT = "01_corporate/board_minutes_2025-10-16.docx"
OFFICERS = "01_corporate/officers_and_directors.md"
PRESS = "01_corporate/press_release_series_b_2022.html"
CUSTOMERS = "04_commercial/customer_list_2025-12-31.csv"
PIPELINE = "04_commercial/sales_pipeline_2026.csv"
HEALTH = "04_commercial/customer_health_notes.md"
PRICES = "04_commercial/price_book_2025.xlsx"
HANDBOOK = "05_hr/employee_handbook_excerpts.docx"
GRANTS = "05_hr/option_grants_2025.csv"
KEY_EMP = "05_hr/key_employees.xlsx"
SOC2 = "06_tech/soc2_type2_report_2025.pdf"
PENTEST = "06_tech/pentest_summary_2025.html"
PM_MAR = "06_tech/incident_postmortem_2025-03-02.md"
PM_AUG = "06_tech/incident_postmortem_2025-08-14.md"
AVAIL = "06_tech/platform_availability_2025.csv"
ROADMAP_V1 = "06_tech/product_roadmap_2026_v1.md"
ROADMAP_V2 = "06_tech/product_roadmap_2026_v2.md"
RETENTION = "06_tech/data_retention_policy.md"
ARCH = "06_tech/architecture_overview.md"
NOTEBOOK = "06_tech/leak_classifier_evaluation.ipynb"
MAIL = "07_correspondence/"
MAIL_HARWICK = MAIL + "2025-03-21_harwick_falls_amendment_signed.eml"
MAIL_POOL = MAIL + "2025-10-08_option_pool_request.eml"
MAIL_TL4 = MAIL + "2025-10-21_tideline4_schedule.eml"
MAIL_CHURN = MAIL + "2025-11-04_q3_churn_correction.eml"
MAIL_MFN = MAIL + "2025-12-11_trentholm_mfn_analysis.eml"
MAIL_SOC2 = MAIL + "2025-12-18_soc2_remediation_complete.eml"
MAIL_AQUANEX = MAIL + "2026-01-07_aquanex_mediation_update.eml"
MAIL_FY2025 = MAIL + "2026-01-26_fy2025_final_numbers.eml"
CALL_NOTES = MAIL + "call_notes_harrowgate_2025-12-09.txt"


def q(type_, question, answer, must_facts, gold_files, computed_facts=None):
    item = {"question": question, "answer": answer, "must_facts": must_facts,
            "gold_files": gold_files, "type": type_}
    if computed_facts:
        item["computed_facts"] = computed_facts
    return item


_QUESTIONS = [
    # ---------------------------------------------------------------- literal
    q(L, "What is the initial term of the Master Subscription and Hardware Agreement with the City "
         "of Harwick Falls?",
      "Three (3) years from the Effective Date of 1 April 2022 (clause 9.1), i.e. to 31 March 2025; "
      "it then renews automatically for two-year Renewal Terms.",
      ["three (3) years", "1 April 2022"], [MSA]),
    q(L, "What unit price does Schedule A of the Brannock Manufacturing and Supply Agreement set for "
         "the TideLine 3 sensor, fully assembled and tested?",
      "$118.40 per unit (part number QHM-TL3-ASSY), FCA Penang.",
      ["$118.40"], [BRANNOCK]),
    q(L, "What interest rate applies to the Cobalt Ridge Bank term loan?",
      "A floating rate equal to the greater of the prime rate plus 1.25% and 8.50% per year, "
      "payable monthly.",
      ["prime rate plus 1.25%", "8.50%"], [LOAN, AUDIT]),
    q(L, "When does the lease of the Duluth headquarters at 410 Lakewalk Avenue expire?",
      "On 31 May 2028. There is one five-year renewal option, exercisable by notice at least nine "
      "months before expiry (by 31 August 2027).",
      ["31 May 2028"], ["03_legal/duluth_lease_abstract.txt"]),
    q(L, "What was the root cause of the Cistern ingestion outage on 14 August 2025?",
      "The TLS server certificate of the us-central MQTT ingestion brokers expired. Automatic "
      "renewal by cert-manager used a DNS-01 challenge whose DNS API credentials had not been "
      "migrated to the new DNS provider in July 2025, so every renewal since 15 July failed "
      "unnoticed.",
      ["TLS server certificate", "DNS-01 challenge"], [PM_AUG]),
    q(L, "Which firm issued the independent auditor's report on the FY2024 consolidated financial "
         "statements, and on what date?",
      "Pellworth & Strand LLP, Minneapolis, dated 28 March 2025 (an unmodified opinion covering "
      "FY2024 and FY2023).",
      ["Pellworth & Strand LLP", "28 March 2025"], [AUDIT]),
    q(L, "When is the claim construction (Markman) hearing in Aquanex Sensing GmbH v. Quillmoor "
         "Hydrometrics scheduled?",
      "17 March 2026. No trial date has been set.",
      ["17 March 2026"], [LITIGATION, MAIL_AQUANEX]),
    q(L, "What precision and recall did LeakNet-GBT v3 achieve on the held-out test set?",
      "Precision 0.912 and recall 0.874 (F1 0.893), against 0.861 and 0.842 for v2.",
      ["0.912", "0.874"], [NOTEBOOK, DECK]),
    q(L, "What is the list price of the MeterMesh gateway, cellular (SKU MM-GW2) in the 2025 price "
         "book?",
      "$2,950.00 (EUR 2,730.00; GBP 2,340.00).",
      ["$2,950.00"], [PRICES]),
    q(L, "How many days of paid time off do full-time employees accrue per calendar year under "
         "section 4.2 of the Employee Handbook?",
      "Twenty-two (22) days per calendar year, pro-rated in the first year, plus eleven paid "
      "holidays; up to five unused days can be carried over to 31 March.",
      ["twenty-two (22) days"], [HANDBOOK]),

    # ---------------------------------------------------------------- paraphrased
    q(P, "How long can a new mum or dad who is the main person looking after the baby take off "
         "work on full pay?",
      "16 weeks at full base salary (the other parent gets 6 weeks); eligibility starts after 90 "
      "days of employment.",
      ["16 weeks"], [HANDBOOK]),
    q(P, "Once a customer relationship ends, for how many years does the company keep the "
         "processed measurements coming from that customer's field devices?",
      "Derived telemetry (fingerprints, noise, pressure and flow readings, leak events) is kept "
      "for the life of the contract and then 7 years unless the customer asks for earlier "
      "deletion; raw audio snippets are deleted after 90 days.",
      ["7 years"], [RETENTION]),
    q(P, "If prices climb with inflation, by how much at most can the biggest municipal client's "
         "yearly platform bill go up in one step?",
      "4.0% per annual increase: the fee may follow the change in CPI-U on each anniversary, "
      "capped at 4.0% (clause 7.4 of the Harwick Falls agreement, still applying from "
      "1 April 2026 under Amendment No. 1).",
      ["4.0%"], [MSA, AMEND, CUSTOMERS]),
    q(P, "Which backer put in the most money in the 2022 funding round, and how many shares did it "
         "receive?",
      "Basalt Peak Capital III, L.P., which led the Series B and bought 2,016,000 Series B "
      "Preferred shares at $8.68 ($17,498,880).",
      ["Basalt Peak Capital III", "2,016,000"], [CAP, PRESS]),
    q(P, "How much did the company pay to make the former salesman's claim over his dismissal go "
         "away?",
      "$185,000 inclusive of attorneys' fees, agreed on 19 September 2025 and paid on "
      "3 October 2025, to Jared Pellicano (former Director of Sales, Central Region), without "
      "admission of liability.",
      ["$185,000", "Jared Pellicano"], [LITIGATION]),
    q(P, "Under internal rules, how quickly must someone who quits or is fired be locked out of "
         "company systems?",
      "Within 24 hours of the end of employment (handbook section 8.4; SOC 2 control CC6.2-03).",
      ["24 hours"], [HANDBOOK, SOC2]),
    q(P, "What was the worst weakness the outside hackers hired in late 2025 found, and has it "
         "been closed?",
      "Greyfen Security's high-severity finding GF-H1: broken object-level authorisation in the "
      "alarms API let a user of one customer read another customer's alarm metadata by changing "
      "the site ID. It was fixed on 19 November 2025 and verified at the retest on 26 November.",
      ["broken object-level authorisation", "19 November 2025"], [PENTEST]),
    q(P, "By how much did the town showcased in our marketing write-up cut the fraction of its "
         "water that disappears before reaching a paying customer?",
      "From 23% to 14.5% within 24 months (Harwick Falls case study).",
      ["23%", "14.5%"], ["04_commercial/case_study_harwick_falls.html"]),
    q(P, "How long do the company's clip-on listening devices run before their power source is "
         "exhausted?",
      "Up to ten years at one recording per night (TideLine 3).",
      ["ten years"], ["04_commercial/product_overview.html"]),
    q(P, "What penalty does the company face if it buys less from its outsourced hardware maker "
         "in a year than it committed to?",
      "A fee of 15% of the then-current unit price for every unit below the annual minimum of "
      "24,000 sensor units (clause 4 of the Brannock agreement).",
      ["15%", "24,000"], [BRANNOCK]),
    q(P, "How much warning does the petrochemical plant customer need to give to pull out of its "
         "deal ahead of schedule, and what does pulling out cost?",
      "After the first 12 months it may end the order on at least 60 days' written notice, paying "
      "25% of the subscription fees remaining for the rest of the term (Sorrento Bay order form, "
      "clause 5.3).",
      ["60 days", "25%"], ["03_legal/sorrento_bay_order_form_2024.docx"]),

    # ---------------------------------------------------------------- multihop
    q(M, "What was the correct trailing twelve-month gross revenue churn at 30 September 2025, and "
         "why does it differ from the figure in the Q3 2025 board deck?",
      "5.9%, not the 6.8% shown in the deck: Cedar Hollow's churn of $138,000 was counted twice. "
      "Corrected churned and contracted ARR was $908,000 on opening ARR of $15.39M (CFO e-mail of "
      "4 November 2025; KPI dashboard restated).",
      ["5.9%", "6.8%", "$138,000"], [DECK, MAIL_CHURN, KPI]),
    q(M, "After the reserve increase approved by the board in October 2025, how many shares are "
         "reserved under the 2016 Equity Incentive Plan, and how many remain available for grant?",
      "The cap table at 30 September 2025 shows 2,400,000 reserved and unissued shares, of which "
      "665,000 were available; the 16 October 2025 board (stockholder consent 30 October) added "
      "500,000, giving 2,900,000 reserved and 1,165,000 available.",
      ["2,400,000", "665,000", "500,000"], [CAP, MIN_OCT, MAIL_POOL],
      computed_facts=["2,900,000", "1,165,000"]),
    q(M, "Why did the City of Harwick Falls receive a service credit for August 2025, and how large "
         "was it?",
      "August availability in us-central was 99.57% after the 14 August outage, below the 99.7% "
      "commitment set by Amendment No. 1 (originally 99.5%) but above 99.0%, so Exhibit C gives "
      "10% of the monthly subscription fee: $1,265,000 / 12 x 10% = $10,541.67.",
      ["99.57%", "99.7%", "10%", "$10,541.67"], [MSA, AMEND, PM_AUG, AVAIL]),
    q(M, "When is TideLine 4 now expected to become generally available, and why did the date "
         "change?",
      "Q3 2026 (roadmap v2 of 3 November 2025), one quarter later than the Q2 2026 in roadmap v1: "
      "the Vantor Acoustics hydrophone failed freeze-thaw qualification (seal delamination after "
      "180 cycles), so a revised seal and a second source (Kielmark Sonics) are being qualified.",
      ["Q3 2026", "Q2 2026", "Vantor Acoustics", "freeze-thaw"], [ROADMAP_V1, ROADMAP_V2, MAIL_TL4]),
    q(M, "What will Quillmoor pay Brannock per TideLine 3 sensor from January 2026, and why?",
      "$114.85: Quillmoor bought 31,460 units in 2025, more than the 30,000 threshold in clause "
      "5.4, so the Schedule A price of $118.40 falls by 3% from 1 January 2026.",
      ["$114.85", "31,460", "$118.40", "3%"], [BRANNOCK, FINAL, BUDGET]),
    q(M, "When will the mediation in the Aquanex patent case take place, and what is Aquanex "
         "currently asking for?",
      "5 February 2026 (moved from 22 January 2026 because of the mediator's leave). Aquanex's "
      "demand of 5 January 2026 is a $2.1 million lump sum with no running royalty, down from "
      "$3.4 million plus a 4% royalty.",
      ["5 February 2026", "22 January 2026", "$2.1 million"], [LITIGATION, MAIL_AQUANEX]),
    q(M, "Was the minimum-revenue covenant of the term loan met in the fourth quarter of 2025?",
      "Yes. The covenant requires trailing three-month revenue of at least $6,500,000; Q4 2025 "
      "revenue was $9,850K (final management report), and the report confirms both covenants "
      "were met at every monthly test in 2025.",
      ["$6,500,000", "$9,850K"], [LOAN, FINAL]),
    q(M, "Does the sensor price agreed with the Port Authority of Veldhaven trigger the "
         "most-favoured-customer clause of the Trentholm agreement?",
      "Probably not, in the General Counsel's view. Clause 11.2 covers public-sector water "
      "undertakers ordering 2,000+ units below £340; Veldhaven's 2,600 sensors at EUR 395 are "
      "about £328.84, but Veldhaven is a port authority rather than a water undertaker. Exposure "
      "would be about GBP 4,464; she recommends disclosing it to Trentholm and offering GBP 329.",
      ["11.2", "£340", "EUR 395", "328.84"], [TRENTHOLM, VELDHAVEN, MAIL_MFN]),
    q(M, "Who chairs the board committee that recommended the auditor for FY2025, and what audit "
         "fee did the board approve?",
      "Gwendolyn Ostrowski chairs the Audit Committee; on its recommendation the board "
      "re-engaged Pellworth & Strand LLP on 17 April 2025 for a fee of $214,000 (FY2024: "
      "$196,000).",
      ["Gwendolyn Ostrowski", "$214,000"], [OFFICERS, MIN_APR]),
    q(M, "How much Veldhaven Phase 2 installation revenue is in the final FY2025 figures, and "
         "why?",
      "None: $250,000 was moved to deferred revenue and Q1 2026 because the Port Authority signed "
      "the acceptance certificate required by clause 6.3 only on 8 January 2026, although "
      "installation finished on 19 December 2025.",
      ["$250,000", "8 January 2026", "6.3"], [FINAL, VELDHAVEN, MAIL_FY2025]),
    q(M, "Which customer's security team asked for proof that the SOC 2 exceptions were fixed "
         "before renewing, and when was the access-revocation fix put in place?",
      "Northgate Semiconductor Fab 4 (term ends 31 July 2026). Automated SCIM deprovisioning "
      "went live on 11 December 2025, fixing exception CC6.2-03.",
      ["Northgate Semiconductor Fab 4", "11 December 2025", "SCIM"], [HEALTH, MAIL_SOC2, SOC2]),

    # ---------------------------------------------------------------- aggregate
    q(A, "What is the combined ARR of active customers whose current contract term ends in 2026?",
      "$8,042,900 across 12 customers: Trentholm, Greater Marlow, Sorrento Bay, Ashgrove County, "
      "Bellmarsh, Northgate, Prairie Junction, Marlinspike Mills, Halden Brook, Brightwell, Mesa "
      "Quemada and Oakhurst Springs.",
      ["Greater Marlow", "Halden Brook", "Mesa Quemada"], [CUSTOMERS],
      computed_facts=["$8,042,900", "12"]),
    q(A, "What is the total ARR from customers in the United Kingdom?",
      "$2,870,200: Trentholm Regional Water Authority ($914,400), Tamsworth Valley Water Board "
      "($711,200), Aldermoor Water plc ($635,000) and Vale of Corran Water ($609,600).",
      ["Trentholm Regional Water Authority", "Tamsworth Valley Water Board", "Aldermoor Water plc",
       "Vale of Corran Water"], [CUSTOMERS],
      computed_facts=["$2,870,200"]),
    q(A, "How much has Fernhill Ventures invested in Quillmoor across all rounds, and what fully "
         "diluted stake does it hold?",
      "$11,999,680: $7,000,000 in the Series A (2,187,500 shares) and $4,999,680 in the Series B "
      "(576,000 shares), 2,763,500 shares or 16.64% fully diluted (13.17% + 3.47%).",
      ["$7,000,000.00", "$4,999,680.00", "13.17%", "3.47%"], [CAP],
      computed_facts=["$11,999,680", "2,763,500", "16.64%"]),
    q(A, "What was the total of the service credits Quillmoor issued for platform incidents in "
         "2025?",
      "$50,550: $12,150 for the 2 March delayed-alarm incident and $38,400.00 for the 14 August "
      "outage.",
      ["$12,150", "$38,400.00"], [PM_MAR, PM_AUG, AVAIL],
      computed_facts=["$50,550"]),
    q(A, "How many granted patents does Quillmoor hold, and in which jurisdictions?",
      "Nine: six US patents (10,391,552; 11,204,377; 11,583,019; 11,892,774; 12,034,661; "
      "12,298,105), one European patent (EP 3655210, validated in DE, FR, GB, NL and SE), one UK "
      "patent (GB 2611842) and one Canadian patent (CA 3,061,447).",
      ["11,204,377", "EP 3655210", "GB 2611842", "CA 3,061,447"], [PATENTS],
      computed_facts=["9"]),
    q(A, "What was Quillmoor's cumulative net loss over FY2022 to FY2024?",
      "About $6.77 million: $3.98 million (FY2022) + $1.925 million (FY2023) + $0.87 million "
      "(FY2024).",
      ["$3.98 million", "(1,925)", "(870)"], [STATEMENTS, AUDIT],
      computed_facts=["$6.77 million"]),
    q(A, "How many stock options did the board grant in 2025 in total, and at what exercise "
         "prices?",
      "282,000: 186,000 at $2.14 on 17 April 2025 and 96,000 at $2.61 on 24 July 2025.",
      ["186,000", "96,000", "$2.14", "$2.61"], [GRANTS, MIN_APR, MIN_JUL],
      computed_facts=["282,000"]),
    q(A, "What is the probability-weighted ARR of the new-logo opportunities in the 2026 sales "
         "pipeline?",
      "$1,221,250 across eight new-logo opportunities with $3,415,000 of unweighted ARR; the "
      "largest weighted contributions are City of Lantern Point ($405,000) and Kessock Firth Water "
      "($231,750).",
      ["City of Lantern Point", "Kessock Firth Water"], [PIPELINE],
      computed_facts=["$1,221,250", "$3,415,000"]),
    q(A, "Which material contracts give the counterparty a consent right, a termination right or a "
         "default if Quillmoor is acquired?",
      "Four: Trentholm (prior consent required, termination if none, clause 18.2); Veldhaven "
      "(notice within 10 working days, termination on 90 days' notice within 6 months, clause "
      "19.2); the Cobalt Ridge Bank loan (change in control is an event of default unless repaid "
      "at closing, section 8.9); Brannock (may terminate on 12 months' notice if the acquirer is a "
      "competitor, clause 12.2). Harwick Falls can be assigned to a successor on notice.",
      ["Trentholm", "Veldhaven", "Cobalt Ridge", "Brannock"],
      [REGISTER, TRENTHOLM, VELDHAVEN, LOAN, BRANNOCK]),
    q(A, "If Project Heron closes on 30 April 2026, how much must be paid to Cobalt Ridge Bank "
         "to retire the loan, not counting accrued interest?",
      "$3,775,000: remaining principal of $3,500,000, the 4.0% final payment fee of $240,000 and "
      "the 1.0% prepayment fee of $35,000, plus accrued interest.",
      ["$3,500,000", "$240,000", "$35,000"], [LOAN],
      computed_facts=["$3,775,000"]),
    q(A, "How much of accounts receivable at 31 December 2025 was more than 60 days past due, and "
         "from which customers?",
      "$221,550: Greater Marlow Utilities District $163,750 (61–90 days) plus $57,800 over 90 days "
      "from Town of Eastwick Harbor Water Department ($38,200) and Brightwell University "
      "Facilities ($19,600).",
      ["$163,750", "Town of Eastwick Harbor Water Department", "Brightwell University Facilities"],
      [AR, HEALTH], computed_facts=["$221,550"]),

    # ---------------------------------------------------------------- negative
    q(N, "Why did Quillmoor acquire Aquanex Sensing in 2025?",
      "It did not. Aquanex Sensing GmbH is a competitor that is suing Quillmoor for patent "
      "infringement (D. Del., C.A. No. 1:24-cv-00917, filed 9 August 2024); the case is pending.",
      ["1:24-cv-00917", "9 August 2024"], [LITIGATION, AUDIT]),
    q(N, "What drove Quillmoor's FY2025 revenue of $36.45 million?",
      "$36.45 million is the superseded draft figure. Final FY2025 revenue is $36.2 million, "
      "after $250,000 of Veldhaven Phase 2 installation revenue was deferred to Q1 2026.",
      ["$36.2 million", "$250,000"], [FINAL, DRAFT, MAIL_FY2025]),
    q(N, "What did the qualified opinion in Quillmoor's SOC 2 Type II report say about access "
         "revocation?",
      "The opinion was not modified: Larchmont issued an unqualified opinion. The report notes an "
      "exception (CC6.2-03): for 3 of the 25 leavers sampled, access was revoked 2 to 6 days after "
      "termination instead of within 24 hours.",
      ["not modified", "3 of the 25 leavers"], [SOC2]),
    q(N, "When did the City of Harwick Falls' contract with Quillmoor expire in March 2025?",
      "It did not expire. Amendment No. 1, signed on 21 March 2025, renewed it for 1 April 2025 "
      "to 31 March 2027 at $1,265,000 a year.",
      ["21 March 2025", "31 March 2027"], [AMEND, MAIL_HARWICK]),
    q(N, "How much did Quillmoor pay to settle the Aquanex patent lawsuit?",
      "Nothing: the case has not settled. A mediation is set for 5 February 2026; management's "
      "settlement authority is $750,000 and Aquanex's current demand is $2.1 million.",
      ["5 February 2026", "$750,000"], [LITIGATION, MAIL_AQUANEX]),
    q(N, "Why did the board approve the Series B financing in 2021?",
      "The Series B was not in 2021: it closed on 15 September 2022 ($25 million led by Basalt "
      "Peak Capital at $8.68 per share).",
      ["15 September 2022", "$8.68"], [PRESS, CAP]),
    q(N, "How many patents does Quillmoor hold in Japan?",
      "None. The portfolio covers US, EP, GB and Canada only (the US, Europe, the UK and Canada), plus a PCT application; "
      "management confirmed to Harrowgate there are no patents in Japan or China.",
      ["US, EP, GB and Canada only"], [PATENTS, CALL_NOTES]),
    q(N, "When did Cedar Hollow Municipal Utilities renew its subscription in 2025?",
      "It did not renew: its term ended on 31 May 2025 after a sensor-battery warranty dispute, "
      "resolved with 300 replacement sensors and a $42,000 service credit.",
      ["31 May 2025", "$42,000"], [CUSTOMERS, LITIGATION, HEALTH]),
    q(N, "What role did CFO Delphine Achterberg play in the 2019 Series A?",
      "None: she joined Quillmoor in June 2022 (start date 2022-06-06), three years after the "
      "Series A closed on 21 June 2019.",
      ["June 2022", "21 June 2019"], [OFFICERS, KEY_EMP, CAP]),
    q(N, "What happens if Quillmoor misses the 99.9% availability commitment in the Harwick Falls "
         "agreement?",
      "The contract does not commit to 99.9% (that is only the internal platform target). The "
      "commitment was 99.5% and is 99.7% since Amendment No. 1; below it the city gets service "
      "credits of 10%, 25% or 50% of the monthly fee, and may terminate after three consecutive "
      "months below 98.0%.",
      ["99.5%", "99.7%"], [MSA, AMEND, ARCH]),
    q(N, "Why was Quillmoor's FY2025 operating loss larger than in FY2024?",
      "It was not a loss: FY2025 operating income was $650,000, compared with an operating loss "
      "of $1.21 million in FY2024.",
      ["$650,000", "$1.21 million"], [FINAL]),
]

QUESTIONS = [{"id": f"q{i:03d}", **item} for i, item in enumerate(_QUESTIONS, start=1)]
