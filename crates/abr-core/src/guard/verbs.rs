//! The committing verbs: words in an element's accessible name that make a click
//! committing, in several languages.
//!
//! Matching is deliberately wide: a word that *starts with* a stem matches (`pay` matches
//! `Payment`, `order` matches `Orders`), and a phrase matches whole words in order. A
//! harmless button refused is the cheap error; a payment allowed is not.

/// Stems for scripts that separate words with spaces: a word of the name starting with one
/// of these matches.
const STEMS: &[&str] = &[
    // English
    "post",
    "publish",
    "send",
    "submit",
    "apply",
    "buy",
    "pay",
    "order",
    "purchase",
    "checkout",
    "confirm",
    "delete",
    "remove",
    "signup",
    "register",
    "subscribe",
    "upload",
    "save",
    "share",
    "tweet",
    "reply",
    "donate",
    "transfer",
    "book",
    "reserve",
    "unsubscribe",
    "approve",
    "accept",
    "agree",
    "invite",
    "install",
    "sell",
    "bid",
    // German
    "senden",
    "absenden",
    "veröffentlich",
    "posten",
    "kaufen",
    "bezahl",
    "zahlen",
    "bestell",
    "bestätig",
    "lösch",
    "entfern",
    "registrier",
    "hochladen",
    "anwenden",
    "übernehmen",
    "speicher",
    "abonnier",
    "kündig",
    // French
    "publier",
    "envoyer",
    "soumettre",
    "valider",
    "appliquer",
    "acheter",
    "payer",
    "commander",
    "confirmer",
    "supprimer",
    "retirer",
    "inscri",
    "téléverser",
    "enregistrer",
    "partager",
    "paiement",
    "régler",
    // Spanish and Portuguese
    "publicar",
    "enviar",
    "aplicar",
    "comprar",
    "pagar",
    "pago",
    "ordenar",
    "confirmar",
    "eliminar",
    "borrar",
    "quitar",
    "registr",
    "subir",
    "guardar",
    "compartir",
    "encomendar",
    "excluir",
    "apagar",
    "remover",
    "cadastr",
    "carregar",
    "salvar",
    "pedido",
    "finalizar",
    // Italian
    "pubblica",
    "invia",
    "applica",
    "acquista",
    "compra",
    "paga",
    "ordina",
    "conferma",
    "elimina",
    "cancella",
    "rimuovi",
    "iscriviti",
    "carica",
    "salva",
    "condividi",
    // Dutch
    "plaatsen",
    "versturen",
    "verzenden",
    "toepassen",
    "kopen",
    "betalen",
    "bestellen",
    "bevestigen",
    "verwijderen",
    "registreren",
    "uploaden",
    "opslaan",
    "aanmelden",
    // Russian
    "опубликова",
    "отправ",
    "примени",
    "купи",
    "оплат",
    "заказ",
    "подтверд",
    "удали",
    "зарегистр",
    "загруз",
    "сохрани",
];

/// Phrases of several words: they match whole words, in order.
const PHRASES: &[&str] = &[
    "sign up",
    "check out",
    "place order",
    "add to cart",
    "create account",
    "s'inscrire",
    "jetzt kaufen",
    // "Cancel" alone closes a dialog (harmless); these cancel something.
    "cancel subscription",
    "cancel membership",
    "cancel plan",
    "cancel account",
    "cancel booking",
    "cancel reservation",
    "cancel trip",
];

/// Fragments for scripts without spaces between words: a name containing one matches.
const FRAGMENTS: &[&str] = &[
    // Japanese
    "投稿",
    "送信",
    "公開",
    "購入",
    "支払",
    "注文",
    "確定",
    "削除",
    "登録",
    "アップロード",
    "適用",
    "保存",
    "申し込",
    "申込",
    // Chinese
    "发布",
    "發佈",
    "發布",
    "提交",
    "发送",
    "發送",
    "购买",
    "購買",
    "支付",
    "付款",
    "下单",
    "订购",
    "确认",
    "確認",
    "删除",
    "刪除",
    "注册",
    "註冊",
    "上传",
    "上傳",
    "应用",
    "保存",
    // Korean
    "게시",
    "전송",
    "보내기",
    "구매",
    "결제",
    "주문",
    "확인",
    "삭제",
    "가입",
    "업로드",
    "적용",
    "저장",
    "신청",
];

/// The committing verb in `name`, if any (the stem, phrase or fragment that matched).
pub fn committing_verb(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    if let Some(f) = FRAGMENTS.iter().find(|f| lower.contains(**f)) {
        return Some(f);
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    // "Sign-up", "signup" and "sign up" are one verb.
    let joined = words.join(" ");
    if let Some(p) = PHRASES.iter().find(|p| {
        let spaced = format!(" {joined} ");
        spaced.contains(&format!(" {p} "))
    }) {
        return Some(p);
    }
    for (i, word) in words.iter().enumerate() {
        if let Some(stem) = STEMS.iter().find(|s| word.starts_with(**s)) {
            return Some(stem);
        }
        // Two words written as one: "sign up" as "signup", "check out" as "checkout".
        if let Some(next) = words.get(i + 1) {
            let pair = format!("{word}{next}");
            if let Some(stem) = STEMS.iter().find(|s| pair == **s) {
                return Some(stem);
            }
        }
    }
    None
}

/// Stems of harmless controls (a word of the name starting with one matches), in several
/// languages: looking, paging, filtering, sorting, opening, closing, cancelling, going back.
/// A name with a committing verb is committing whatever else it says.
const HARMLESS_STEMS: &[&str] = &[
    // English
    "search",
    "find",
    "next",
    "previous",
    "more",
    "less",
    "show",
    "hide",
    "load",
    "expand",
    "collapse",
    "open",
    "close",
    "dismiss",
    "cancel",
    "back",
    "filter",
    "sort",
    "newest",
    "oldest",
    "latest",
    "popular",
    "menu",
    "details",
    "detail",
    "view",
    "help",
    "home",
    "page",
    "zoom",
    "read",
    "copy",
    "settings",
    "preferences",
    "options",
    "refresh",
    "reload",
    "browse",
    "explore",
    "see",
    "first",
    "last",
    "info",
    "about",
    "overview",
    "list",
    "grid",
    "print",
    "language",
    // German
    "such",
    "weiter",
    "zurück",
    "mehr",
    "weniger",
    "anzeigen",
    "öffnen",
    "schließen",
    "abbrechen",
    "filtern",
    "sortier",
    "hilfe",
    "einstellung",
    "nächste",
    "vorherige",
    "ausklappen",
    "einklappen",
    "ansehen",
    // French
    "recherch",
    "suivant",
    "précédent",
    "plus",
    "moins",
    "afficher",
    "voir",
    "ouvrir",
    "fermer",
    "annuler",
    "filtr",
    "trier",
    "détails",
    "aide",
    "paramètres",
    "retour",
    // Spanish, Portuguese, Italian
    "buscar",
    "búsqueda",
    "siguiente",
    "anterior",
    "más",
    "mostrar",
    "ver",
    "abrir",
    "cerrar",
    "cancelar",
    "ordenar",
    "detalles",
    "ayuda",
    "volver",
    "atrás",
    "pesquisar",
    "próximo",
    "fechar",
    "voltar",
    "cerca",
    "successivo",
    "avanti",
    "precedente",
    "mostra",
    "altro",
    "apri",
    "chiudi",
    "annulla",
    "dettagli",
    "aiuto",
    "indietro",
    // Dutch
    "zoeken",
    "volgende",
    "vorige",
    "meer",
    "sluiten",
    "annuleren",
    // Russian
    "поиск",
    "найти",
    "далее",
    "следующ",
    "назад",
    "ещё",
    "еще",
    "показать",
    "открыть",
    "закрыть",
    "отмена",
    "фильтр",
    "сортир",
    "подробн",
];

/// Harmless words that match only whole (as stems they would match too much: `prev` is
/// `preview`'s start).
const HARMLESS_WORDS: &[&str] = &["prev", "tab", "tabs"];

/// Harmless fragments for scripts without spaces between words.
const HARMLESS_FRAGMENTS: &[&str] = &[
    // Japanese
    "検索",
    "次へ",
    "前へ",
    "もっと見る",
    "表示",
    "開く",
    "閉じる",
    "キャンセル",
    "絞り込",
    "並べ替え",
    "詳細",
    "ヘルプ",
    "設定",
    "戻る",
    "メニュー",
    // Chinese
    "搜索",
    "下一页",
    "上一页",
    "更多",
    "显示",
    "顯示",
    "打开",
    "關閉",
    "关闭",
    "取消",
    "筛选",
    "篩選",
    "排序",
    "详情",
    "詳情",
    "帮助",
    "设置",
    "返回",
    "菜单",
    // Korean
    "검색",
    "다음",
    "이전",
    "더 보기",
    "더보기",
    "열기",
    "닫기",
    "취소",
    "필터",
    "정렬",
    "자세히",
    "도움말",
    "설정",
    "뒤로",
    "메뉴",
];

/// Pagination marks that name a control on their own.
const HARMLESS_MARKS: &[&str] = &["<", ">", "«", "»", "‹", "›", "←", "→", "…", "...", "×", "✕"];

/// Whether `name` says the control is harmless: a harmless word of the built-in list or of
/// `extra` (lower-case words or phrases a platform adds), a page number, or a pagination
/// mark; and no committing verb ([`committing_verb`] wins).
pub fn harmless_name(name: &str, extra: &[String]) -> bool {
    let lower = name.trim().to_lowercase();
    if lower.is_empty() || committing_verb(&lower).is_some() {
        return false;
    }
    if HARMLESS_MARKS.contains(&lower.as_str())
        || (lower.len() <= 4 && lower.bytes().all(|b| b.is_ascii_digit()))
    {
        return true;
    }
    if HARMLESS_FRAGMENTS.iter().any(|f| lower.contains(f)) {
        return true;
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let spaced = format!(" {} ", words.join(" "));
    let extra_matches = |e: &String| {
        let e = e.trim().to_lowercase();
        if e.is_empty() {
            false
        } else if e.contains(char::is_whitespace) {
            spaced.contains(&format!(" {e} "))
        } else {
            words.iter().any(|w| w.starts_with(e.as_str()))
        }
    };
    extra.iter().any(extra_matches)
        || words
            .iter()
            .any(|w| HARMLESS_WORDS.contains(w) || HARMLESS_STEMS.iter().any(|s| w.starts_with(s)))
}

#[cfg(test)]
mod tests {
    use super::{committing_verb, harmless_name};

    #[test]
    fn committing_names_in_several_languages_match() {
        for name in [
            "Pay now",
            "Post",
            "Publish",
            "Send message",
            "Submit",
            "Apply filter",
            "Buy",
            "Place order",
            "Delete",
            "Remove item",
            "Sign up",
            "Sign-up",
            "Upload photo",
            "Confirm purchase",
            "Cancel subscription",
            "Cancel order",
            "Jetzt kaufen",
            "Absenden",
            "Löschen",
            "Envoyer",
            "Supprimer",
            "S'inscrire",
            "Publicar",
            "Enviar",
            "Pagar",
            "Invia",
            "Acquista",
            "Bestellen",
            "Оплатить",
            "Отправить",
            "投稿する",
            "送信",
            "购买",
            "提交",
            "결제하기",
            "삭제",
        ] {
            assert!(committing_verb(name).is_some(), "{name}");
        }
    }

    #[test]
    fn harmless_names_are_recognised_in_several_languages() {
        for name in [
            "Search",
            "Next page",
            "Previous",
            "Show more",
            "Load more",
            "Filters",
            "Sort by date",
            "Newest",
            "Cancel",
            "Close",
            "Open menu",
            "View details",
            "Expand",
            "Back",
            "Home",
            "Read more",
            "Copy link",
            "Zoom in",
            "Settings",
            "Help",
            "2",
            "»",
            "×",
            "Weiter",
            "Suchen",
            "Mehr anzeigen",
            "Abbrechen",
            "Schließen",
            "Suivant",
            "Rechercher",
            "Afficher plus",
            "Annuler",
            "Fermer",
            "Siguiente",
            "Buscar",
            "Ver más",
            "Cancelar",
            "Cerrar",
            "次へ",
            "検索",
            "もっと見る",
            "キャンセル",
            "閉じる",
            "Prev",
            "Tabs",
        ] {
            assert!(harmless_name(name, &[]), "{name}");
        }
        // A committing verb wins; a name that says nothing is not harmless.
        for name in [
            "Cancel subscription",
            "Show and pay",
            "Delete filter",
            "",
            "  ",
            "Like",
            "Follow",
            "Go",
            "12345",
            "OK",
            "Preview",
            "Table",
        ] {
            assert!(!harmless_name(name, &[]), "{name}");
        }
        // A platform extends the list.
        assert!(!harmless_name("Translate post", &["translate".into()]));
        assert!(harmless_name("Translate", &["translate".into()]));
        assert!(harmless_name(
            "See translation",
            &["see translation".into()]
        ));
    }

    #[test]
    fn harmless_names_do_not_match() {
        for name in [
            "Next page",
            "Show more",
            "Open menu",
            "Home",
            "Profile",
            "Search",
            "Help",
            "Details",
            "Back",
            "Close",
            "Filters",
            "Weiter",
            "Suivant",
            "Siguiente",
            "次へ",
            "",
            "   ",
        ] {
            assert_eq!(committing_verb(name), None, "{name}");
        }
    }
}
